# SPDX-License-Identifier: Apache-2.0
"""The agent hosting an application's rank 0 killed (SIGKILL) and started again in its run directory while the
application runs, at each step of a reconfiguration; real malleod, real `malleo run` in pool mode, real MPI:

1. between reconfigurations: the processes register with the new agent by themselves and the application takes
   commands again;
2. with a command queued (the coordinator stopped with SIGSTOP, so it cannot poll): `malleo force --wait` notices
   the dead agent at once, the new agent reports the command lost (it never ran), and numbers the next one after it;
3. during the agreement and 4. during the redistribution (MALLEO_FAULT=stall-agree@*, stall-redistribute@*: the
   coordinator pauses there, announced on stderr): the operation completes or not as a whole, and the new agent
   records its result or reports it lost; the application's size is the old or the new one, never in between.

Throughout, the run computes on: its checksum at the end equals a static run's.

usage: restart_test.py --mpi openmpi|mpich HEAT2D"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import MALLEO, Cluster, check, wait_for
from testkit import checksum, heat2d_args, kill, run_env
from force_test import apps, static_checksum

ITERATIONS = 2500
PACE_MS = 20  # 50 s of computing at most, whatever the process count: the phases take about 30 s


def known(agent, app):
    """The application as the agent sees it once its coordinator has polled (malleable), else None."""
    try:
        shown = apps(agent).get(app)
    except (RuntimeError, subprocess.TimeoutExpired):
        return None
    return shown if shown and shown["malleable"] else None


def active_count(agent, app):
    shown = known(agent, app)
    return sum(1 for p in shown["processes"] if p["active"]) if shown else None


def settled(agent, app):
    """The application's size once the agent's view agrees with itself: the size the coordinator polls with equals
    the active processes registered, and no command is pending."""
    shown = known(agent, app)
    if not shown or shown["command"] is not None:
        return None
    active = sum(1 for p in shown["processes"] if p["active"])
    return active if active == shown["size"] else None


def output_lines(path):
    with open(path) as f:
        return f.read()


def force_waiting(agent, app, *args):
    return subprocess.Popen([MALLEO, "--agent", agent.local, "force", app, *args, "--wait", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main():
    a = heat2d_args()
    work = tempfile.mkdtemp(prefix="malleo-restart-")
    env = run_env(a.mpi)
    env["MALLEO_FAULT"] = "stall-agree@*,stall-redistribute@*"
    env["MALLEO_FAULT_STALL"] = "2"
    grid = ["--rows", "256", "--columns", "256", "--iterations", str(ITERATIONS)]
    out_path = os.path.join(work, "run.txt")
    with Cluster() as cluster, open(out_path, "w") as out:
        n1 = cluster.add("n1")
        run = subprocess.Popen(
            [MALLEO, "--agent", n1.local, "run", "--mpi", a.mpi, "-n", "2", "--max", "5", "--profile-dir", work,
             "--", a.heat2d, *grid, "--pace", str(PACE_MS)],
            stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            app = wait_for(lambda: next((i for i in apps(n1) if i.startswith(os.path.basename(a.heat2d) + "-")
                                         and known(n1, i)), None), 30)
            check(app is not None, "the application registers and its coordinator polls n1")

            # 1. Between reconfigurations.
            n1 = cluster.restart("n1")
            check(wait_for(lambda: settled(n1, app) == 2, 15, 0.2),
                  "1. restarted: n1 knows the application again, 2 active processes, from their own reports")
            r = n1.cli("force", app, "split", "1", "--wait", "30", timeout=40)
            check(r.returncode == 0 and "2 -> 3 processes" in r.stdout,
                  f"1. and it takes commands again: split 1 ok ({r.stdout.strip()} {r.stderr.strip()})")

            # 2. A command queued: the coordinator stopped, it cannot poll.
            coordinator = next(p["pid"] for p in known(n1, app)["processes"] if p["active"] and p["rank"] == 0)
            os.kill(coordinator, signal.SIGSTOP)
            try:
                waiting = force_waiting(n1, app, "merge", "1")
                queued = wait_for(lambda: [e for e in n1.events("command_queued") if e["op"] == "merge"], 10)
                check(queued, "2. the merge is queued")
                killed = time.monotonic()
                n1.proc.kill()
                try:
                    _, err = waiting.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    waiting.kill()
                    _, err = waiting.communicate()
                noticed = time.monotonic() - killed
                check(waiting.returncode == 1 and "exited while command" in err and noticed < 2,
                      f"2. force --wait notices the dead agent at once ({noticed:.2f} s, exit {waiting.returncode}: "
                      f"{err.strip()})")
                n1 = cluster.restart("n1")
                lost = wait_for(lambda: n1.events("command_lost"), 5)
                check(lost and lost[0]["command"] == queued[0]["command"] and not lost[0]["sent"],
                      f"2. the new agent reports the queued command lost: it never ran ({lost})")
            finally:
                os.kill(coordinator, signal.SIGCONT)
            check(wait_for(lambda: settled(n1, app) == 3, 15, 0.2),
                  "2. the application goes on with its 3 processes and registers with the new agent")
            r = n1.cli("force", app, "merge", "1", timeout=10)
            number = re.search(r"command (\d+) queued", r.stdout)
            check(number and int(number.group(1)) > queued[0]["command"],
                  f"2. the next command's number follows the lost one's ({r.stdout.strip()})")
            check(wait_for(lambda: settled(n1, app) == 2, 30, 0.2), "2. and it is carried out: 3 -> 2")

            # 3. and 4. Killed inside the operation, which then completes or fails as a whole.
            for step, what, op, before, after in [(3, "the agreement's decision", "split", 2, 3),
                                                  (4, "the redistribution's outcome", "merge", 3, 2)]:
                announced = f"fault: stalling 2.0 s before {what}"
                stalls = output_lines(out_path).count(announced)
                waiting = force_waiting(n1, app, op, "1")
                check(wait_for(lambda: output_lines(out_path).count(announced) > stalls, 30, 0.02),
                      f"{step}. the coordinator stalls before {what}")
                n1.proc.kill()
                waiting.communicate(timeout=10)
                check(waiting.returncode == 1, f"{step}. force --wait ends as the agent dies")
                n1 = cluster.restart("n1")
                recovered = wait_for(lambda: n1.events("command_recovered"), 5)
                check(recovered and recovered[-1]["op"] == op,
                      f"{step}. the new agent knows the {op} was in flight ({recovered and recovered[-1]})")
                command = recovered[-1]["command"]
                outcome = wait_for(lambda: [e for e in n1.events() if e.get("command") == command and
                                            e["type"] in ("command_result", "command_lost")], 30, 0.2)
                check(outcome, f"{step}. and then its result or that it is lost ({outcome})")
                size = wait_for(lambda: settled(n1, app), 20, 0.2)
                if outcome and outcome[-1]["type"] == "command_result":
                    expected = after if outcome[-1]["ok"] else before
                    check(size == expected, f"{step}. the result arrived ({outcome[-1].get('text')}); the "
                                            f"application has {expected} processes ({size})")
                else:
                    check(size in (before, after),
                          f"{step}. the result was lost; the application has {before} or {after} processes ({size})")
                if step == 3 and size != after:
                    r = n1.cli("force", app, "split", "1", "--wait", "30", timeout=40)
                    check(r.returncode == 0, f"3. the split done now instead, for step 4 ({r.stdout.strip()})")

            run.wait(timeout=300)
        finally:
            kill(run)
    output = output_lines(out_path)
    if run.returncode != 0:
        print(output[-2000:])
    check(run.returncode == 0, f"the run ends well ({run.returncode})")
    final = re.search(r"^final: (\d+) processes", output, re.M)
    check(final and int(final.group(1)) == 2, f"and ends on the 2 processes of the last merge ({final and final.group(0)})")
    static = static_checksum(a, grid, work, env)
    check(checksum(output) == static, f"checksum equal to a static run's ({checksum(output)} vs {static})")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
