# SPDX-License-Identifier: Apache-2.0
"""Bad configurations, flags and modules: one line naming the problem, exit 2 (a file that is not JSON: the line and
column where it stops being JSON, for malleod and for `malleo cluster up --config`);
a shared-object module is loaded by name from the module path; one built for
another ABI is refused, or replaced by the built-in when so configured."""
import json
import os
import subprocess
import tempfile

from harness import MALLEOD, Cluster, check

MODULE_DIRS = os.environ["MALLEO_TEST_MODULE_DIRS"].split(":")


def run_agent(config, *flags):
    with tempfile.TemporaryDirectory(prefix="malleo-mod-") as d:
        path = os.path.join(d, "config.json")
        with open(path, "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config))
        return subprocess.run([MALLEOD, "--config", path, "--run-dir", d, "--listen",
                               "tcp://127.0.0.1:*", *flags], capture_output=True, text=True, timeout=10)


def refused(result, *words):
    lines = result.stderr.strip().splitlines()
    return result.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words)


r = run_agent({"membership": {"failure_timeout": "soon"}})
check(refused(r, "membership.failure_timeout", "expected a number"), f"bad value: {r.stderr.strip()}")
r = run_agent({"agent": {"lsiten": "tcp://*:1"}})
check(refused(r, "agent.lsiten", "unknown key"), f"unknown key: {r.stderr.strip()}")
r = run_agent("{ not json")
check(refused(r, "not valid JSON at line 1, column 3"), f"not JSON: {r.stderr.strip()}")
# A comma missing after a value: the line and column of the key after it, where the comma goes.
MISSING_COMMA = '{\n  // a comment\n  "agent": {\n    "id": "x"\n    "peers": []\n  }\n}\n'
r = run_agent(MISSING_COMMA)
check(refused(r, "not valid JSON at line 5, column 5", "unexpected string literal"), f"missing comma: {r.stderr.strip()}")
r = run_agent('{"agent": {"id": "x",}}')
check(refused(r, "not valid JSON at line 1, column 22"), f"trailing comma: {r.stderr.strip()}")
with tempfile.TemporaryDirectory(prefix="malleo-mod-") as d:
    path = os.path.join(d, "base.json")
    with open(path, "w") as f:
        f.write(MISSING_COMMA)
    r = subprocess.run([os.environ["MALLEO"], "--cluster-dir", os.path.join(d, "cluster"), "cluster", "up", "--nodes",
                        "1", "--config", path], capture_output=True, text=True, timeout=10)
    check(refused(r, "--config", "not valid JSON at line 5, column 5"), f"cluster up --config: {r.stderr.strip()}")
r = run_agent({}, "--peer")
check(r.returncode == 2 and "--peer" in r.stderr, f"bad flag: {r.stderr.strip()}")
r = run_agent({}, "--id", "no spaces allowed")
check(refused(r, "agent.id"), f"bad --id: {r.stderr.strip()}")
r = run_agent({"modules": {"protocol": "nosuch"}})
check(refused(r, "protocol module 'nosuch' not found", "p2p"), f"unknown module: {r.stderr.strip()}")
r = run_agent({"modules": {"profiling": "static"}, "static": {"apw": 3}})
check(refused(r, "static", "apw"), f"module option out of range: {r.stderr.strip()}")
r = run_agent({"modules": {"decision": "badabi", "path": MODULE_DIRS}})
check(refused(r, "decision module 'badabi' refused", "ABI 99.0"), f"wrong ABI: {r.stderr.strip()}")

with Cluster() as cluster:
    a = cluster.add("fallback", {"modules": {"profiling": "static", "decision": "badabi",
                                             "path": MODULE_DIRS, "on_error": "fallback"}})
    decision = a.status()["modules"]["decision"]
    check(decision == {"name": "loaddiff", "source": "built-in", "abi_minor": 3},
          f"on_error=fallback: the built-in took its place ({decision})")
    b = cluster.add("dso", {"modules": {"profiling": "static", "decision": "skeleton",
                                        "path": MODULE_DIRS}, "skeleton": {"answer": True}})
    decision = b.status()["modules"]["decision"]
    check(decision["name"] == "skeleton" and decision["source"].endswith("malleo-decision-skeleton.so"),
          f"a shared-object module loaded from the module path ({decision})")
