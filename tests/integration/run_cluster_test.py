# SPDX-License-Identifier: Apache-2.0
"""`malleo run` places the ranks on the nodes of a virtual cluster (issue 25): with the target a node of a real
`malleo cluster up` of 3 nodes, the active ranks register with the target node's agent and the spare ranks of
--max with the agents of the other nodes, round-robin (then the target again) or on the --spares-on nodes, and the
PCM bridge binds each rank to its node's CPUs (/proc/<pid>/status, Cpus_allowed_list). Real agents, the real
launcher, a real paced heat2d.

- Open MPI, pool mode: `--node n1 run -n 2 --max 5`: ranks 0, 1 and 4 on n1, 2 on n2, 3 on n3.
- Open MPI, spawn mode (the default without --max): `--node n1 run -n 1`, then `malleo force ... split 1 --node n2`:
  the spawned process registers with n2's agent and is bound to n2's CPUs; the run announces both jobs' reports.
- MPICH, pool mode: `--node n2 run -n 1 --max 3 --spares-on n3,n1`: rank 0 on n2, 1 on n3, 2 on n1; spawn mode is
  refused in one line.

usage: run_cluster_test.py --mpi openmpi|mpich HEAT2D"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from testkit import heat2d_args, kill
from harness import MALLEO, check, cluster_cli, wait_for, take_down

PACE_MS = 20


def apps(cluster_dir, node):
    r = cluster_cli(cluster_dir, "--node", node, "apps", "--json")
    if r.returncode != 0:
        check(False, f"malleo --node {node} apps answers ({r.stderr.strip()})")
    return json.loads(r.stdout)["apps"]


def ranks_by_node(cluster_dir, nodes, program):
    """{node: {app id: sorted ranks}} of the program's applications, as each node's agent shows them."""
    seen = {}
    for node in nodes:
        for app in apps(cluster_dir, node):
            if app["id"].startswith(program + "-"):
                seen.setdefault(node, {})[app["id"]] = sorted(p["rank"] for p in app["processes"])
    return seen


def processes(cluster_dir, node, program):
    return [p for app in apps(cluster_dir, node) if app["id"].startswith(program + "-") for p in app["processes"]]


def cpus_allowed(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return re.search(r"^Cpus_allowed_list:\s*(\S+)", f.read(), re.M).group(1)
    except OSError:
        return None


def cpu_list(cpus):
    """The kernel's list syntax for a sorted list of CPUs: 0-2,5."""
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(parts)


def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(e.split("=", 1) for e in f.read().decode(errors="replace").split("\0") if "=" in e)


def check_placement(cluster_dir, cluster, program, want):
    """Waits until each node's agent shows exactly the ranks `want` gives it ({node: [ranks]}), all of one
    application; then that every one of them is bound to its node's CPUs and knows its node and agent."""
    nodes = list(cluster)
    expected = {node: ranks for node, ranks in want.items() if ranks}
    shown = {}
    def placed():
        nonlocal shown
        shown = ranks_by_node(cluster_dir, nodes, program)
        return {node: sorted(r for ranks in by_app.values() for r in ranks) for node, by_app in shown.items()} == \
            expected
    check(wait_for(placed, 60, 0.25), f"each node's agent has the ranks {expected} ({shown})")
    ids = {app for by_app in shown.values() for app in by_app}
    check(len(ids) == 1, f"one application, registered with {len(shown)} agents ({ids})")
    for node in expected:
        cpus = cpu_list(cluster[node]["cpus"])
        for p in processes(cluster_dir, node, program):
            bound = wait_for(lambda: cpus_allowed(p["pid"]) == cpus, 20, 0.1)
            check(bound, f"rank {p['rank']} (pid {p['pid']}) on {node} is bound to {node}'s CPUs {cpus} "
                  f"({cpus_allowed(p['pid'])})")
            env = environ(p["pid"])
            check(env.get("MALLEO_NODE") == node and env.get("MALLEO_AGENT") == cluster[node]["local"] and
                  env.get("MALLEO_CLUSTER_DIR") == cluster_dir and f"{node}={cpus}" in env.get("MALLEO_NODES", ""),
                  f"rank {p['rank']} knows its node, its agent, the cluster and the nodes' CPUs")
    return ids.pop()


def start(cluster_dir, env, *args):
    return subprocess.Popen([MALLEO, "--cluster-dir", cluster_dir, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def ended(run, processes):
    output, _ = run.communicate(timeout=300)
    ok = run.returncode == 0 and f"final: {processes} processes" in output
    check(ok, f"the run ends well with {processes} processes" + ("" if ok else f" ({run.returncode})\n{output}"))
    return output


def openmpi(a, cluster_dir, cluster, work, env):
    program = os.path.basename(a.heat2d)
    paced = ["--iterations", "400", "--pace", str(PACE_MS)]
    run = start(cluster_dir, env, "--node", "n1", "run", "-n", "2", "--max", "5", "--profile-dir", work, "--",
                a.heat2d, *paced)
    try:
        check_placement(cluster_dir, cluster, program, {"n1": [0, 1, 4], "n2": [2], "n3": [3]})
        active = {}
        def only_active():
            nonlocal active
            active = {n: sorted(p["rank"] for p in processes(cluster_dir, n, program) if p["active"])
                      for n in cluster}
            return active == {"n1": [0, 1], "n2": [], "n3": []}
        check(wait_for(only_active, 10, 0.25), f"ranks 0 and 1 are active, the spares parked ({active})")
        check(run.poll() is None, "the run outlived the checks")
        ended(run, 2)
    finally:
        kill(run)

    run = start(cluster_dir, dict(env, MALLEO_PCM_VERBOSE="1"), "--node", "n1", "run", "-n", "1", "--profile-dir",
                work, "--", a.heat2d, *paced)
    try:
        app = check_placement(cluster_dir, cluster, program, {"n1": [0]})
        # The bridge's first poll of the agent marks the application malleable: force is taken from then on.
        check(wait_for(lambda: any(x["id"] == app and x["malleable"] for x in apps(cluster_dir, "n1")), 30, 0.1),
              "the application's PCM bridge polls n1's agent")
        r = cluster_cli(cluster_dir, "--node", "n1", "force", app, "split", "1", "--node", "n2", "--wait", "60",
                        timeout=90)
        check(r.returncode == 0 and "1 -> 2 processes" in r.stdout,
              f"spawn mode: force split 1 --node n2: ok ({r.stdout.strip()} {r.stderr.strip()})")
        spawned = wait_for(lambda: processes(cluster_dir, "n2", program), 10, 0.25)
        check(spawned and len(spawned) == 1, f"the spawned process registers with n2's agent ({spawned})")
        cpus = cpu_list(cluster["n2"]["cpus"])
        check(wait_for(lambda: cpus_allowed(spawned[0]["pid"]) == cpus, 10, 0.1),
              f"... and is bound to n2's CPUs {cpus} ({cpus_allowed(spawned[0]['pid'])})")
        output = ended(run, 2)
        named = re.findall(r"^malleo: report (\S+\.json) ", output, re.M)
        check(len(named) == 2 and sum(".spawn" in n for n in named) == 1 and all(map(os.path.exists, named)),
              f"the run announces its launch's report and its spawned job's ({named})")
    finally:
        kill(run)


def mpich(a, cluster_dir, cluster, work, env):
    program = os.path.basename(a.heat2d)
    r = cluster_cli(cluster_dir, "--node", "n1", "run", "-n", "1", "--mode", "spawn", "--", a.heat2d, env=env)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "MPICH" in r.stderr,
          f"--mode spawn under MPICH: exit 2, one line ({r.stderr.strip()})")
    r = cluster_cli(cluster_dir, "--node", "n1", "run", "-n", "1", "--max", "2", "--spares-on", "n2,n9", "--", a.heat2d,
            env=env)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "n9" in r.stderr and "n1, n2, n3" in
          r.stderr, f"--spares-on an unknown node: exit 2, one line naming the nodes ({r.stderr.strip()})")
    r = cluster_cli(cluster_dir, "--node", "n1", "run", "-n", "2", "--active-on", "n1,n9", "--", a.heat2d, env=env)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--active-on n1,n9" in r.stderr and
          "n1, n2, n3" in r.stderr, f"--active-on an unknown node: exit 2, one line naming the nodes ({r.stderr.strip()})")

    run = start(cluster_dir, env, "--node", "n2", "run", "-n", "1", "--max", "3", "--spares-on", "n3,n1",
                "--profile-dir", work, "--", a.heat2d, "--iterations", "400", "--pace", str(PACE_MS))
    try:
        check_placement(cluster_dir, cluster, program, {"n2": [0], "n3": [1], "n1": [2]})
        check(run.poll() is None, "the run outlived the checks")
        ended(run, 1)
    finally:
        kill(run)


def main():
    a = heat2d_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cluster_dir = tempfile.mkdtemp(prefix="malleo-run-cluster-")
    work = tempfile.mkdtemp(prefix="malleo-run-cluster-work-")
    up = cluster_cli(cluster_dir, "cluster", "up", "--nodes", "3", "--profiling", "static", "--json")
    check(up.returncode == 0, f"a virtual cluster of 3 nodes starts ({up.stderr.strip()})")
    cluster = {n["name"]: n for n in json.loads(up.stdout)["nodes"]}
    try:
        (openmpi if a.mpi == "openmpi" else mpich)(a, cluster_dir, cluster, work, env)
    finally:
        take_down(cluster_dir)
    shutil.rmtree(cluster_dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
