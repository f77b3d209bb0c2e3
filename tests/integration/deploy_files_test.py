# SPDX-License-Identifier: Apache-2.0
"""What configs/ ships for an operator works: every flag of the systemd unit's ExecStart is one `malleod --help`
lists, `systemd-analyze verify` accepts the unit (its ExecStart pointed at the built malleod, the one thing that
differs before `meson install`; skipped with a line where systemd-analyze is missing), and each shipped agent
configuration starts a real agent (its addresses moved to loopback and free ports, its run directory to a temporary
one: the rest as shipped)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from harness import MALLEO, MALLEOD, check, wait_for

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
UNIT = os.path.join(ROOT, "configs", "malleod.service")


def exec_start():
    with open(UNIT) as f:
        lines = [line.strip() for line in f if line.strip().startswith("ExecStart=")]
    check(len(lines) == 1, f"the unit has one ExecStart ({lines})")
    return shlex.split(lines[0][len("ExecStart="):])


def main():
    argv = exec_start()
    help_text = subprocess.run([MALLEOD, "--help"], capture_output=True, text=True, timeout=10).stdout
    flags = [word for word in argv[1:] if word.startswith("--")]
    check(flags, f"ExecStart passes flags ({argv})")
    for flag in flags:
        check(re.search(r"(^|\s)" + re.escape(flag) + r"\b", help_text) is not None,
              f"ExecStart's {flag} is a malleod flag")
    check(os.path.basename(argv[0]) == "malleod", f"ExecStart runs malleod ({argv[0]})")
    with open(UNIT) as f:
        limits = [line.strip()[len("LimitNOFILE="):] for line in f if line.strip().startswith("LimitNOFILE=")]
    check(len(limits) == 1 and limits[0].isdigit() and int(limits[0]) >= 65536,
          f"the unit raises the descriptor limit above systemd's default of 1,024 ({limits})")

    work = tempfile.mkdtemp(prefix="malleo-deploy-")
    try:
        if shutil.which("systemd-analyze"):
            with open(UNIT) as f:
                unit = f.read().replace(argv[0], os.path.realpath(MALLEOD))
            path = os.path.join(work, "malleod.service")
            with open(path, "w") as f:
                f.write(unit)
            r = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0 and not r.stderr.strip(),
                  f"systemd-analyze verify accepts the unit ({r.returncode}: {r.stderr.strip()})")
        else:
            print("skipped: systemd-analyze verify (systemd-analyze is not installed)")

        for name in sorted(os.listdir(os.path.join(ROOT, "configs"))):
            if not name.endswith(".json"):
                continue
            with open(os.path.join(ROOT, "configs", name)) as f:
                config = json.load(f)
            agent = config.setdefault("agent", {})
            run_dir = os.path.join(work, name[:-5])
            agent.update({"listen": "tcp://127.0.0.1:*", "run_dir": run_dir, "peers": []})
            # The files name /etc/malleo's keys; this node's are made here, as an operator makes them.
            keys = os.path.join(work, "keys")
            if not os.path.exists(os.path.join(keys, "deploy.key")):
                subprocess.run([MALLEO, "keygen", "--dir", keys, "deploy"], check=True, capture_output=True)
            config["security"] = {"secret_key": os.path.join(keys, "deploy.key"), "allowed_keys": keys}
            if "app_listen" in agent:
                agent["app_listen"] = "tcp://127.0.0.1:*"
            path = os.path.join(work, name)
            with open(path, "w") as f:
                json.dump(config, f)
            log = open(os.path.join(work, name + ".log"), "w")
            proc = subprocess.Popen([MALLEOD, "--config", path, "--id", "deploy"], stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                up = wait_for(lambda: os.path.exists(os.path.join(run_dir, "agent.json")) or proc.poll() is not None,
                              30, 0.05)
                check(up and proc.poll() is None,
                      f"configs/{name} starts an agent ({open(os.path.join(work, name + '.log')).read()[-500:]})")
            finally:
                proc.terminate()
                proc.wait(10)
                log.close()
            check(proc.returncode == 0, f"configs/{name}: the agent leaves cleanly on SIGTERM ({proc.returncode})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
