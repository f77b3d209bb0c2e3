# SPDX-License-Identifier: Apache-2.0
"""`malleo apps` shows the truth: a real heat2d (Open MPI, PCM bridge in pool mode, libmalleo_pmpi preloaded) on a
virtual cluster of 2 nodes (`malleo cluster up`), launched MPMD so that ranks 0-1 report to n1's agent and the
parked spares 2-3 to n2's. Without --node, `malleo apps` asks both agents and shows the application once, its
processes grouped by node: n1 2 active, n2 2 parked; after `malleo force ... split 1`, n2 1 active and 1 parked,
and the last reconfiguration. With --node, that agent only.

The ranks report every 30 s (MALLEO_REPORT_INTERVAL): a process that parks or is activated must say so when it
happens, not at its next periodic report, or the agent shows parked spares ACTIVE (the state a process has at
registration) for up to an interval.

usage: apps_test.py HEAT2D_OPENMPI LIBMALLEO_PMPI_OPENMPI"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from testkit import skip
from harness import check, cluster_cli, wait_for

REPORT_INTERVAL = "30"
# Well under the report interval: only a report sent when the state changed arrives in time.
PROMPT = 5


def cli(cluster_dir, *args, timeout=60):
    return cluster_cli(cluster_dir, *args, timeout=timeout)


def apps_json(cluster_dir, *node):
    r = cli(cluster_dir, *node, "apps", "--json")
    if r.returncode != 0:
        check(False, f"malleo {' '.join(node)} apps --json answers ({r.stderr.strip()})")
    return json.loads(r.stdout)


def heat2d_app(cluster_dir, program):
    apps = [a for a in apps_json(cluster_dir)["apps"] if a["id"].startswith(os.path.basename(program) + "-")]
    return apps[0] if len(apps) == 1 else None


def counts(app):
    return {n["node"]: (n["active"], n["parked"]) for n in app["nodes"]} if app else None


def mpmd_command(program, lib, nodes, work):
    """mpirun with two application contexts of one MPI job: ranks 0-1 report to n1's agent, ranks 2-3 to n2's. Pool
    mode: the bridge keeps 2 active, so 2 and 3 park."""
    def context(node):
        env = [f"LD_PRELOAD={lib}", f"MALLEO_AGENT={nodes[node]['local']}", "MALLEO_POOL_ACTIVE=2",
               f"MALLEO_REPORT_INTERVAL={REPORT_INTERVAL}", "MALLEO_PROFILE=full", f"MALLEO_PROFILE_DIR={work}"]
        return ["-n", "2", "env", *env, program, "--rows", "256", "--columns", "256", "--iterations", "500",
                "--pace", "20"]
    launcher = ["mpirun.openmpi", "--oversubscribe", "--mca", "pml", "ob1"]
    if os.geteuid() == 0:
        launcher.append("--allow-run-as-root")
    return launcher + context("n1") + [":"] + context("n2")


def main():
    program, lib = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.exists(program) or not os.path.exists(lib) or shutil.which("mpirun.openmpi") is None:
        skip(f"{program}, {lib} or mpirun.openmpi missing")
    cluster_dir = tempfile.mkdtemp(prefix="malleo-apps-")
    work = tempfile.mkdtemp(prefix="malleo-apps-work-")
    up = cli(cluster_dir, "cluster", "up", "--nodes", "2")
    check(up.returncode == 0, f"a virtual cluster of 2 nodes starts ({up.stderr.strip()})")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("MALLEO_AGENT", None)
    run = None
    try:
        with open(os.path.join(cluster_dir, "cluster.json")) as f:
            nodes = {n["name"]: n for n in json.load(f)["nodes"]}
        run = subprocess.Popen(mpmd_command(program, lib, nodes, work), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, cwd=work)

        # The bridge's first poll (every 0.2 s) makes the application malleable at n1; the four ranks registered.
        app = wait_for(lambda: (lambda a: a if a and a["malleable"] and len(a["processes"]) == 4 else None)(
            heat2d_app(cluster_dir, program)), 30, 0.2)
        check(app is not None, "the application registers with both agents, its bridge polls n1's")
        seen = time.monotonic()
        check(sorted((p["node"], p["rank"]) for p in app["processes"]) == [("n1", 0), ("n1", 1), ("n2", 2),
                                                                           ("n2", 3)],
              "one application, its processes by the node whose agent they report to")
        shown = None

        def parked_shown():
            nonlocal shown
            shown = counts(heat2d_app(cluster_dir, program))
            return shown == {"n1": (2, 0), "n2": (0, 2)}
        check(wait_for(parked_shown, PROMPT, 0.2),
              f"n1: 2 active, n2: 2 parked, within {PROMPT} s of the first poll ({shown} after "
              f"{time.monotonic() - seen:.1f} s)")
        merged = apps_json(cluster_dir)
        check(merged["agents"] == ["n1", "n2"] and merged["unreachable"] == [], "both agents answered")
        check(app["root_agent"] == "n1" and app["size"] == 2, "the application's fields are its root agent's")

        r = cli(cluster_dir, "apps")
        lines = r.stdout.splitlines()
        check(r.returncode == 0 and lines[0] == "2 nodes (n1, n2): 1 application"
              and "  processes  n1: 2 active; n2: 2 parked" in lines,
              f"the human view says so ({r.stdout.strip()})")
        rows = [l.split() for l in lines if l.startswith("n2 ")]
        check(len(rows) == 2 and all(row[4] == "parked" for row in rows), f"n2's rows say parked ({rows})")

        only = apps_json(cluster_dir, "--node", "n2")
        check(only["agent"] == "n2" and [sorted(p["rank"] for p in a["processes"]) for a in only["apps"]] == [[2, 3]],
              "--node n2: that agent only, its two processes")

        r = cli(cluster_dir, "--node", "n1", "force", app["id"], "split", "1", "--wait", "30")
        check(r.returncode == 0 and "2 -> 3 processes" in r.stdout, f"force split 1: ok, 2 -> 3 ({r.stdout.strip()})")
        split = time.monotonic()

        def activated():
            nonlocal shown
            shown = counts(heat2d_app(cluster_dir, program))
            return shown == {"n1": (2, 0), "n2": (1, 1)}
        check(wait_for(activated, PROMPT, 0.2),
              f"after the split n2 has 1 active and 1 parked, within {PROMPT} s ({shown} after "
              f"{time.monotonic() - split:.1f} s)")
        r = cli(cluster_dir, "apps")
        last = [l for l in r.stdout.splitlines() if l.startswith("  last ")]
        check(len(last) == 1 and "split 1: 2 -> 3 processes, ok at iteration" in last[0] and "(command 1" in last[0],
              f"the last reconfiguration: op, before -> after, ok ({last})")
        check(heat2d_app(cluster_dir, program)["last_result"]["after"] == 3, "--json carries the last result")

        output, _ = run.communicate(timeout=120)
        check(run.returncode == 0 and "final: 3 processes" in output, f"the run ends well with 3 processes\n{output}")
        check(wait_for(lambda: heat2d_app(cluster_dir, program) is None, 10), "and leaves both agents")
    finally:
        if run and run.poll() is None:
            run.kill()
            run.wait()
        cli(cluster_dir, "cluster", "down")
    shutil.rmtree(cluster_dir, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
