# SPDX-License-Identifier: Apache-2.0
"""After `meson install --destdir D`: man -l renders D/<mandir>/man1/malleo.1 with every subcommand malleo knows
(from `malleo __complete`, the binary's own list), the exit statuses of docs/cli.md, the sections a man page's reader
looks for (ENVIRONMENT with MALLEO_AGENT, FILES with events.jsonl, EXAMPLES, SEE ALSO) and the help's common footer
not once per command, and man8/malleod.8 with every option of `malleod --help`, the configuration keys of
docs/configuration.md, SIGNALS and FILES; every document the pages' SEE ALSO names is installed where they say; the bash completion is installed as <datadir>/bash-completion/completions/malleo
and, sourced from there, completes `malleo sta` to status."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from testkit import Problems, verdict

BUILD_ROOT = os.environ["MALLEO_BUILD_ROOT"]
MESON = os.environ.get("MESON", "meson")
MALLEO = os.environ["MALLEO"]
MALLEOD = os.environ["MALLEOD"]
errors = Problems()
check = errors.check


def find(root, relative_end):
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if path.endswith(relative_end):
                return path
    return None


def render(page):
    """The page as text, by man if it is there, else by groff as man would run it."""
    env = dict(os.environ, MANWIDTH="200", MAN_KEEP_FORMATTING="0")
    if shutil.which("man"):
        cmd = ["man", "-l", page]
    else:
        cmd = ["groff", "-man", "-Tutf8", page]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    check(r.returncode == 0 and r.stdout.strip(), f"{' '.join(cmd)}: status {r.returncode}: {r.stderr}")
    # Without a terminal, man may still emit overstrikes (bold: c\bc); the words are what the test reads.
    return re.sub(r".\x08", "", r.stdout)


def see_also(root, text, page):
    """The documents a page's SEE ALSO names are installed in the directory it names, under the staging root."""
    m = re.search(r"^SEE ALSO\n(.*?)(?:\n\S|\Z)", text, re.M | re.S)
    said = " ".join(m.group(1).split()) if m else ""
    where = re.search(r"In (/\S+):", said)
    names = re.findall(r"([A-Za-z-]+\.md)", said)
    check(where and len(names) >= 5, f"{page}'s SEE ALSO names a directory and the documents ({said})")
    if where:
        for name in names:
            check(os.path.isfile(root + os.path.join(where.group(1), name)),
                  f"{page} points at {where.group(1)}/{name}, which meson install does not install")


with tempfile.TemporaryDirectory(prefix="malleo-install-") as d:
    r = subprocess.run([MESON, "install", "-C", BUILD_ROOT, "--no-rebuild", "--quiet", "--destdir", d],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"meson install: status {r.returncode}: {r.stderr[-2000:]}", file=sys.stderr)
        sys.exit(1)
    malleo_page = find(d, "/man1/malleo.1")
    malleod_page = find(d, "/man8/malleod.8")
    completion = find(d, "/share/bash-completion/completions/malleo")
    check(malleo_page and malleod_page and completion,
          f"installed: malleo.1 {malleo_page}, malleod.8 {malleod_page}, completion {completion}")
    if malleo_page:
        text = render(malleo_page)
        commands = subprocess.run([MALLEO, "__complete", "1", "malleo", ""], capture_output=True, text=True,
                                  timeout=10).stdout.split()
        commands = [c for c in commands if c != "help"]
        check(len(commands) >= 14, f"malleo __complete lists {commands}")
        for c in commands:
            check(f"malleo {c}" in text, f"malleo(1) lacks the subcommand {c}")
        for c in ("cluster up", "cluster down", "cluster status"):
            check(f"malleo {c}" in text, f"malleo(1) lacks {c}")
        check("EXIT STATUS" in text and "bad usage or input" in text, "malleo(1) lacks docs/cli.md's exit statuses")
        for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "GLOBAL OPTIONS", "COMMANDS", "ENVIRONMENT", "FILES",
                        "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
            check(re.search(rf"^{heading}$", text, re.M), f"malleo(1) lacks the section {heading}")
        for word in ("MALLEO_AGENT", "MALLEO_NODE", "MALLEO_FORCE", "MALLEO_CLUSTER_DIR", "events.jsonl",
                     "decisions.jsonl", "commands.json", "agent.json", "NODE.key", "malleo cluster up --nodes 4"):
            check(word in text, f"malleo(1) does not mention {word}")
        check(text.count("Global options may also follow") == 1 and "Exit status: 0 ok" not in text,
              f"the help's footer is said once, not per command ({text.count('Global options may also follow')})")
        check(text.count("Print this help message") == 1, "--help is listed once, not per command")
        see_also(d, text, "malleo(1)")
    if malleod_page:
        text = render(malleod_page)
        options = re.findall(r"^\s+(?:-h,)?(--[a-z-]+)", subprocess.run([MALLEOD, "--help"], capture_output=True,
                                                                      text=True, timeout=10).stdout, re.M)
        check(len(options) >= 8, f"malleod --help options: {options}")
        for o in options:
            check(o in text, f"malleod(8) lacks {o}")
        for heading in ("CONFIGURATION", "SIGNALS", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
            check(re.search(rf"^{heading}$", text, re.M), f"malleod(8) lacks the section {heading}")
        for word in ("drain_deadline", "heartbeat_interval", "failure_timeout", "secret_key", "SIGTERM",
                     "decisions.jsonl"):
            check(word in text, f"malleod(8) does not mention {word}")
        see_also(d, text, "malleod(8)")
    if completion:
        program = f"source {completion}; COMP_WORDS=(malleo sta); COMP_CWORD=1; _malleo; echo \"${{COMPREPLY[@]}}\""
        env = dict(os.environ, PATH=os.path.dirname(MALLEO) + ":" + os.environ.get("PATH", ""))
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                           timeout=20, env=env)
        check(r.stdout.strip() == "status", f"installed completion of 'malleo sta': {r.stdout!r} {r.stderr!r}")

verdict(errors, f"{len(errors)} problems with the installed documentation",
        "installed man pages render with every subcommand and option; the completion is installed")
