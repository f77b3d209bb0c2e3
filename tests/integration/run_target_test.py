# SPDX-License-Identifier: Apache-2.0
"""`malleo run` reaches the agent every other command would: under a virtual cluster, `--node n2 run` makes the
ranks report to n2's agent (and not n1's), `--cluster-dir` is honoured, an unknown node is refused in one line before
anything starts, and `--agent off` reaches none. Outside a cluster, `--agent ENDPOINT run` tells the ranks the
agent's id as their node (MALLEO_NODE), unless they were given one. Real agents (`malleo cluster up`), real mpirun, real heat2d.

usage: run_target_test.py HEAT2D_OPENMPI"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from testkit import kill, skip
from harness import MALLEO, check, cluster_cli, wait_for, take_down


def apps(cluster_dir, node):
    r = cluster_cli(cluster_dir, "--node", node, "apps", "--json")
    if r.returncode != 0:
        check(False, f"malleo --node {node} apps answers ({r.stderr.strip()})")
    return json.loads(r.stdout)["apps"]


def environ(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(e.split("=", 1) for e in f.read().decode(errors="replace").split("\0") if "=" in e)


def node_named(cluster_dir, env, endpoint, heat2d, work):
    """`malleo --agent ENDPOINT run -n 1` from a directory with no cluster (so the agent is only an endpoint): the
    MALLEO_NODE its rank was started with, as /proc says, once the rank has registered with that agent."""
    elsewhere = tempfile.mkdtemp(prefix="malleo-run-target-none-")
    run = subprocess.Popen([MALLEO, "--cluster-dir", elsewhere, "--agent", endpoint, "run", "-n", "1",
                            "--profile-dir", work, "--", heat2d, "--iterations", "300", "--pace", "20"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        procs = lambda: [p for a in apps(cluster_dir, "n2") if a["id"].startswith(os.path.basename(heat2d) + "-")
                         for p in a["processes"]]
        seen = wait_for(procs, timeout=30)
        check(bool(seen), f"--agent {endpoint} run: the rank registers with n2's agent")
        node = environ(seen[0]["pid"]).get("MALLEO_NODE")
        output, _ = run.communicate(timeout=120)
        check(run.returncode == 0, f"the run ends well ({run.returncode})\n{output}")
        return node
    finally:
        kill(run)
        shutil.rmtree(elsewhere, ignore_errors=True)


def main():
    heat2d = sys.argv[1]
    if not os.path.exists(heat2d):
        skip(f"{heat2d} not built")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("MALLEO_AGENT", None)
    cluster_dir = tempfile.mkdtemp(prefix="malleo-run-target-")
    work = tempfile.mkdtemp(prefix="malleo-run-target-work-")
    up = cluster_cli(cluster_dir, "cluster", "up", "--nodes", "2", "--profiling", "static", "--json")
    check(up.returncode == 0, f"a virtual cluster of 2 nodes starts ({up.stderr.strip()})")
    try:
        # An unknown node: one line, nothing launched.
        r = subprocess.run([MALLEO, "--cluster-dir", cluster_dir, "--node", "n9", "run", "-n", "1", "--profile-dir",
                            work, "--", heat2d], capture_output=True, text=True, env=env, timeout=30)
        check(r.returncode == 2 and "n9" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              f"--node n9 run: refused in one line naming the node (exit {r.returncode}: {r.stderr.strip()})")
        check(not os.listdir(work), "nothing ran: no report was written")

        # --node n2: the ranks report to n2's agent; n1 sees nothing. Paced so that it outlives the look.
        run = subprocess.Popen([MALLEO, "--cluster-dir", cluster_dir, "--node", "n2", "run", "-n", "2",
                                "--profile-dir", work, "--", heat2d, "--iterations", "300", "--pace", "20"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            # The ranks register one by one: wait for both (the first look may find one).
            mine = lambda: [a for a in apps(cluster_dir, "n2") if a["id"].startswith(os.path.basename(heat2d) + "-")]
            seen = wait_for(mine, timeout=30)
            check(bool(seen), "--node n2 run: the application registers with n2's agent")
            seen = wait_for(lambda: [a for a in mine() if len(a["processes"]) == 2], timeout=10) or seen
            check(len(seen[0]["processes"]) == 2, f"both ranks report to n2 ({len(seen[0]['processes'])})")
            check(apps(cluster_dir, "n1") == [], "n1's agent has no application")
            output, _ = run.communicate(timeout=120)
            check(run.returncode == 0, f"the run ends well ({run.returncode})\n{output}")
        finally:
            kill(run)

        # Outside a cluster the rank would name its host as its node, and a split n2's agent decided onto n2 would
        # find no spare process there.
        n2 = {n["name"]: n for n in json.loads(up.stdout)["nodes"]}["n2"]["local"]
        node = node_named(cluster_dir, env, n2, heat2d, work)
        check(node == "n2", f"--agent <n2's endpoint> run: the rank's MALLEO_NODE is the agent's id ({node})")
        node = node_named(cluster_dir, dict(env, MALLEO_NODE="mine"), n2, heat2d, work)
        check(node == "mine", f"and a MALLEO_NODE the user set is kept ({node})")
    finally:
        take_down(cluster_dir)
    shutil.rmtree(cluster_dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
