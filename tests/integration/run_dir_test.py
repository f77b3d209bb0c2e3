# SPDX-License-Identifier: Apache-2.0
"""The run directory on a shared machine (issue "Trust", issue 46): a real malleod refuses a directory another user
made or anyone may write in, and one inside such a directory (or under a link in one), never writes through a
symbolic link planted there, and writes its files and its socket 0600; a stale agent.json naming a live process that
is not an agent, or an agent killed and not yet reaped (a zombie), does not block a start."""
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time

from testkit import skip
from harness import MALLEOD, check, plain_config, wait_for


def start(run_dir, *extra):
    # Not about authentication: plain TCP, said explicitly (security.plain).
    config = plain_config(os.path.dirname(os.path.abspath(run_dir)))
    return subprocess.Popen([MALLEOD, "--config", config, "--id", "rd", "--listen", "tcp://127.0.0.1:*", "--run-dir",
                             run_dir, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def refused(run_dir, what):
    agent = start(run_dir)
    try:
        output, _ = agent.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        agent.kill()
        output, _ = agent.communicate()
        check(False, f"{what}: the agent started ({output.strip()})")
    lines = [line for line in output.splitlines() if line.strip()]
    check(agent.returncode != 0 and len(lines) == 1, f"{what}: refused in one line, exit {agent.returncode} "
          f"({lines})")
    return lines[0]


def main():
    if os.geteuid() != 0:
        skip("making a directory another user owns needs root")
    base = tempfile.mkdtemp(prefix="malleo-rundir-")
    os.chmod(base, 0o755)
    try:
        victim = os.path.join(base, "victim")
        with open(victim, "w") as f:
            f.write("the victim's file\n")

        # Another user's directory, open to all, with agent.json.tmp planted as a link to the victim's file.
        squatted = os.path.join(base, "squatted")
        os.mkdir(squatted)
        os.chmod(squatted, 0o777)
        os.symlink(victim, os.path.join(squatted, "agent.json.tmp"))
        os.chown(squatted, pwd.getpwnam("nobody").pw_uid, -1)
        line = refused(squatted, "a directory another user made")
        check("belongs to uid" in line, f"the line says whose it is ({line})")
        check(open(victim).read() == "the victim's file\n", "the victim's file is untouched")

        # Our own, but writable by others: something may have been planted.
        open_dir = os.path.join(base, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        os.symlink(victim, os.path.join(open_dir, "agent.json.tmp"))
        line = refused(open_dir, "a directory anyone may write in")
        check("writable by others" in line, f"the line says why ({line})")
        check(open(victim).read() == "the victim's file\n", "the victim's file is untouched")

        # A link given as the run directory.
        link = os.path.join(base, "link")
        os.symlink(open_dir, link)
        check("symbolic link" in refused(link, "a symbolic link as the run directory"), "the line says so")

        # Inside another user's directory (issue 46): that user could swap the run directory for a link at any time.
        nobody = pwd.getpwnam("nobody").pw_uid
        theirs = os.path.join(base, "theirs")
        os.mkdir(theirs, 0o755)
        os.chown(theirs, nobody, -1)
        line = refused(os.path.join(theirs, "run"), "a run directory inside another user's directory")
        check(f"'{theirs}'" in line and "belongs to uid" in line and "--run-dir" in line,
              f"the line names that directory, its owner and the fix ({line})")
        check(not os.path.exists(os.path.join(theirs, "run")), "nothing is made in it")
        # A link they planted there, to a directory of ours: the link is theirs to change.
        mine = os.path.join(base, "mine")
        os.mkdir(mine, 0o700)
        os.symlink(mine, os.path.join(theirs, "link"))
        line = refused(os.path.join(theirs, "link", "run"), "a run directory under a link in another user's directory")
        check(f"'{theirs}'" in line, f"the line names the directory the link is in ({line})")
        check(set(os.listdir(mine)) <= {"plain-config.json"}, "nothing is made through the link (but the test's config)")
        # Under a directory of ours that anyone may write in: anyone could swap the run directory.
        line = refused(os.path.join(base, "open", "run"), "a run directory inside a directory anyone may write in")
        check("writable by others" in line and os.path.join(base, "open") in line, f"the line says which ({line})")
        # A sticky shared directory (as /tmp) is safe for an entry of ours, not for one of another user.
        shared = os.path.join(base, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)
        os.mkdir(os.path.join(shared, "other"), 0o755)
        os.chown(os.path.join(shared, "other"), nobody, -1)
        line = refused(os.path.join(shared, "other", "run"), "a run directory below another user's entry of /tmp")
        check("belongs to uid" in line, f"the line says whose it is ({line})")
        os.mkdir(os.path.join(shared, "ours"), 0o700)
        sticky_run = os.path.join(shared, "ours", "run")
        agent = start(sticky_run)
        try:
            check(wait_for(lambda: os.path.exists(os.path.join(sticky_run, "agent.json")), 10),
                  "an agent starts below an entry of its own in a sticky shared directory")
        finally:
            agent.terminate()
            agent.communicate(timeout=10)

        # Ours and private, with a link planted before it was made private: the agent does not write through it.
        planted = os.path.join(base, "planted")
        os.mkdir(planted, 0o700)
        os.symlink(victim, os.path.join(planted, "events.jsonl"))
        agent = start(planted)
        try:
            check(wait_for(lambda: os.path.exists(os.path.join(planted, "agent.json")), 10),
                  "an agent starts in a private directory of its own")
            check(open(victim).read() == "the victim's file\n",
                  "a link planted as events.jsonl is not written through")
        finally:
            agent.terminate()
            agent.communicate(timeout=10)

        # Ours, readable by others (0755, as mkdir makes it): narrowed to 0700; its files 0600.
        fresh = os.path.join(base, "fresh")
        os.mkdir(fresh, 0o755)
        # A stale agent.json naming pid 1 (alive, not an agent) from a crash.
        with open(os.path.join(fresh, "agent.json"), "w") as f:
            f.write('{"pid": 1}\n')
        agent = start(fresh)
        try:
            info = os.path.join(fresh, "agent.json")
            def written_by_agent():
                try:
                    return json.load(open(info)).get("pid") == agent.pid
                except (OSError, ValueError):
                    return False
            check(wait_for(written_by_agent, 10),
                  "a stale agent.json naming a live process that is no agent does not block a start")
            check(stat.S_IMODE(os.stat(fresh).st_mode) == 0o700, "the run directory is made 0700")
            for name in ("agent.json", "events.jsonl", "decisions.jsonl", "agent.sock"):
                mode = stat.S_IMODE(os.stat(os.path.join(fresh, name)).st_mode)
                check(mode == 0o600, f"{name} is 0600 ({mode:o})")
            # A second agent in the same directory is refused: the first one runs there.
            line = refused(fresh, "a second agent in a running agent's directory")
            check("another agent" in line, f"the line names the running agent ({line})")
        finally:
            agent.terminate()
            agent.communicate(timeout=10)

        # An agent killed and not yet waited for (a zombie: its parent, this test, has not reaped it) runs no more: a
        # new agent starts in its directory.
        killed = start(fresh)
        def runs_there(proc):
            try:
                return json.load(open(os.path.join(fresh, "agent.json"))).get("pid") == proc.pid
            except (OSError, ValueError):
                return False
        check(wait_for(lambda: runs_there(killed), 10), "an agent runs in the directory")
        killed.kill()
        def zombie():
            with open(f"/proc/{killed.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        check(wait_for(zombie, 10), "killed and not waited for, it is a zombie")
        agent = start(fresh)
        try:
            check(wait_for(written_by_agent, 10), "a new agent starts where the zombie ran")
        finally:
            agent.terminate()
            agent.communicate(timeout=10)
            killed.communicate(timeout=10)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
