# SPDX-License-Identifier: Apache-2.0
"""The loop's triggers with the application's ranks spread over hosts (issue 26): the drain, load and merge scenarios of
loop_test.py, each agent on a host of its own (`malleo cluster up --hosts 2`: network namespaces, their own addresses)
and heat2d's ranks launched into those namespaces by `malleo run --active-on n1,n2 ...`, so that every
reconfiguration moves data over the veth links. Real malleod with `ios`, real mpirun/hydra, real CPU load; no `malleo
force` and no MALLEO_FORCE. Each ends with heat2d's checksum compared with a static run's.

  drain  (pool mode) world ranks 0 on n1 and 1 on n2 active, spares on both; `malleo drain n2` (or with --sigterm,
         SIGTERM to n2's agent): n2's decision takes its process away, through n1 (which hosts rank 0), and the
         process has left n2 before n2's agent exits.
  load   (pool mode) the same ranks; busy loops inside n2's namespace, pinned to n2's CPU: n2's decision sends its
         process to n1; at most one reconfiguration per hold-down while the load lasts.
  merge  (pool mode) rank 0 on n1, ranks 1 and 2 on n2's one CPU: n2's decision folds them (3 -> 2 processes: the
         blocks of all three move, n1's included).

Skips (exit 77) with one line where namespaces cannot be made (not root, no `ip`).

usage: hosts_loop_test.py --scenario drain|load|merge --mpi openmpi|mpich [--sigterm] HEAT2D"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import testkit
from testkit import skip
from harness import MALLEO, TIME_SCALE, check, wait_for
from hosts_test import (HostCluster, apps, check_checksum, finish, netns_of, processes_here, registered_app, run_env,
                        stop, unavailable, write_json)

HOLD_DOWN = 4.0


def agent_config(cpu, work_stealing=None, **ios):
    """As loop_test.py's: the agent measures CPU `cpu` alone (the host profiling module), decides every half second
    with `ios`, holds an application HOLD_DOWN seconds after each reconfiguration."""
    return {"agent": {"decision_interval": 0.5, "profile_interval": 0.5},
            "work_stealing": {"idle_threshold": 0.9, **(work_stealing or {})},
            "modules": {"decision": "ios"},
            "host": {"cpus": [cpu]},
            "ios": ios,
            "actions": {"hold_down": HOLD_DOWN, "drain_deadline": 60}}


def events(cluster, node, type_=None):
    """A node's event log (events.jsonl in its run directory), of one type or all."""
    try:
        run_dir = cluster.nodes()[node]["run_dir"]
    except (FileNotFoundError, KeyError):
        return []
    return testkit.events(run_dir, type_)


def results_of(cluster, node, **match):
    return [e for e in events(cluster, node, "reconf_result") if all(e.get(k) == v for k, v in match.items())]


def no_force_used(cluster, *nodes):
    for node in nodes:
        forced = [e for e in events(cluster, node) if e.get("trigger") == "force"]
        check(not forced, f"{node}: no reconfiguration was forced ({forced[:1]})")


def alive(pid):
    """The process runs (not gone, not a zombie no one has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def launch(cluster, a, work, grid, *placement):
    return subprocess.Popen([MALLEO, "--cluster-dir", cluster.dir, "--node", "n1", "run", "--mpi", a.mpi,
                             *placement, "--profile-dir", work, "--", a.heat2d, *grid, "--times"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=run_env(a.mpi))


def placed(cluster, node, app, registered=False):
    """The application's processes that `node`'s agent reports: the active ones, or with `registered` every one that
    registered there, active or not."""
    procs = apps(cluster, node).get(app, {}).get("processes", [])
    return [p for p in procs if registered or p["active"]]


def active_ranks(cluster, node, app, registered=False):
    return sorted(p["rank"] for p in placed(cluster, node, app, registered))


def spread(cluster, app, want, registered=False):
    """Each node's active (or `registered`) world ranks are `want`'s, and each of those processes runs in its node's
    namespace."""
    got = wait_for(lambda: all(active_ranks(cluster, n, app, registered) == r for n, r in want.items()), 60, 0.2)
    check(got, f"the {'registered' if registered else 'active'} ranks are where expected: {want} "
               f"({ {n: active_ranks(cluster, n, app, registered) for n in want} })")
    nodes = cluster.nodes()
    for node in want:
        nets = {p["pid"]: netns_of(p["pid"]) for p in placed(cluster, node, app, registered)}
        check(all(n == netns_of(nodes[node]["pid"]) for n in nets.values()),
              f"{node}'s processes run in {node}'s network namespace ({nets})")


def drain(a, work):
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "1500", "--pace", "8"]
    n1 = write_json(os.path.join(work, "n1.json"), agent_config(0, evacuate_load=0))
    n2 = write_json(os.path.join(work, "n2.json"), agent_config(1, evacuate_load=0))
    with HostCluster("--hosts", "2", "--node-config", f"n1={n1}", "--node-config", f"n2={n2}") as cluster:
        run = launch(cluster, a, work, grid, "-n", "2", "--active-on", "n1,n2", "--max", "4", "--spares-on", "n1,n2")
        try:
            app = registered_app(cluster, a.heat2d)
            spread(cluster, app, {"n1": [0], "n2": [1]})
            agent = cluster.nodes()["n2"]["pid"]
            started = time.monotonic()
            if a.sigterm:
                # As an operator's `systemctl stop` would: the signal drains the node first.
                os.kill(agent, signal.SIGTERM)
                drainer = None
            else:
                drainer = subprocess.Popen([MALLEO, "--cluster-dir", cluster.dir, "drain", "n2", "--wait", "90",
                                            "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # Watched side by side: when n1 (rank 0's agent) has the drain's result, and when n2's agent is gone.
            moved_at = gone_at = None
            while time.monotonic() - started < 90 and gone_at is None:
                if moved_at is None and results_of(cluster, "n1", ok=True, trigger="drain"):
                    moved_at = time.monotonic()
                if not alive(agent):
                    gone_at = time.monotonic()
                time.sleep(0.05)
            check(gone_at is not None, "n2's agent exits")
            if drainer:
                out, err = drainer.communicate(timeout=30 * TIME_SCALE)
                drained = json.loads(out) if drainer.returncode == 0 and out.strip() else {}
                check(drained.get("type") == "drained",
                      f"malleo drain n2 --wait: n2 hosts no active process ({drainer.returncode}: {out.strip()} "
                      f"{err.strip()})")
            check(moved_at is not None and moved_at <= gone_at,
                  f"n2's process left it ({moved_at and moved_at - started:.2f} s) before n2's agent exited "
                  f"({gone_at - started:.2f} s after {'SIGTERM' if a.sigterm else 'malleo drain'})")
            moved = results_of(cluster, "n1", ok=True, trigger="drain")
            check(moved[0]["op"] in ("merge", "migrate") and moved[0]["from_node"] == "n2" and
                  moved[0]["origin"] == "n2" and moved[0]["decision"] == "ios",
                  f"n2's decision took its process away, through n1 ({moved[:1]})")
            last = [e["type"] for e in events(cluster, "n2") if e.get("type") in ("drained", "drain_deadline")]
            check(last and last[-1] == "drained", f"n2 left drained, not at its deadline ({last})")
            # A migration activates n1's spare (world rank 2); a merge leaves rank 0 alone. Either way every active
            # process now runs on n1, in n1's namespace.
            left = [0, 2] if moved[0]["op"] == "migrate" else [0]
            spread(cluster, app, {"n1": left})
            check(len(left) == moved[0]["after"], f"the application's {moved[0]['after']} processes all run on n1")
            output = finish(run)
            merges = results_of(cluster, "n1", ok=True, op="merge")
        finally:
            stop(run)
        no_force_used(cluster, "n1")
    final = re.findall(r"^final: .*$", output, re.M)
    check(final and final[-1].startswith(f"final: {2 - len(merges)} processes"),
          f"heat2d ends on its 2 processes, less those merges took ({final}, {len(merges)} merges)")
    check_checksum(a, output, grid, work, "the drain across hosts")
    return 0


def cpu_hogs(host, cpu, count):
    """`count` busy loops inside `host`'s network and UTS namespaces, pinned to `cpu`: real load, no application's."""
    loop = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    return [subprocess.Popen(["ip", "netns", "exec", host, sys.executable, "-c", loop]) for _ in range(count)]


def load(a, work):
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "3000", "--pace", "8"]
    # As in loop_test.py: n2's load must last 3 s before processes leave, n1 does not leave its CPU for load.
    n1 = write_json(os.path.join(work, "n1.json"), agent_config(0, evacuate_load=0))
    n2 = write_json(os.path.join(work, "n2.json"), agent_config(1, evacuate_ticks=6))
    with HostCluster("--hosts", "2", "--node-config", f"n1={n1}", "--node-config", f"n2={n2}") as cluster:
        run = launch(cluster, a, work, grid, "-n", "2", "--active-on", "n1,n2", "--max", "4", "--spares-on", "n1,n2")
        hogs = []
        try:
            app = registered_app(cluster, a.heat2d)
            spread(cluster, app, {"n1": [0], "n2": [1]})
            loaded = time.monotonic()
            hogs = cpu_hogs(cluster.nodes()["n2"]["host"], 1, 3)
            left = wait_for(lambda: not processes_here(cluster, "n2", app), 30, 0.1)
            check(left, f"under the load the application's process leaves n2 within {time.monotonic() - loaded:.1f} s")
            moved = wait_for(lambda: results_of(cluster, "n1", ok=True, origin="n2", from_node="n2", trigger="tick"),
                             10, 0.1)
            check(moved and moved[0]["op"] in ("migrate", "merge") and moved[0]["decision"] == "ios",
                  f"n2's own decision asked n1, which hosts rank 0, to move it ({moved and moved[0]})")
            check(any("used by processes of no application" in m["why"] for m in moved),
                  f"and said why: the load ({[m['why'] for m in moved]})")
            nets = {p["pid"]: netns_of(p["pid"]) for p in processes_here(cluster, "n1", app)}
            check(nets and all(n == netns_of(cluster.nodes()["n1"]["pid"]) for n in nets.values()),
                  f"the application computes on n1's host alone ({nets})")
            # The load stays for four hold-downs, a window in which the agents may do anything but oscillate: it is
            # what is observed, not a wait for something to happen.
            time.sleep(4 * HOLD_DOWN)
            for hog in hogs:
                hog.kill()
            steady = [e["t"] for e in results_of(cluster, "n1", ok=True)]
            gaps = [b - a_ for a_, b in zip(steady, steady[1:])]
            check(all(g >= HOLD_DOWN - 0.5 for g in gaps),
                  f"at most one reconfiguration per hold-down ({HOLD_DOWN} s) under the steady load: "
                  f"{len(steady)} at t = {[round(t, 1) for t in steady]}")
            output = finish(run)
            everything = [(e["op"], e.get("from_node"), e.get("node"), e["trigger"])
                          for e in results_of(cluster, "n1", ok=True)]
        finally:
            for hog in hogs:
                hog.kill()
            stop(run)
        no_force_used(cluster, "n1", "n2")
    print(f"reconfigurations: {everything}")
    check_checksum(a, output, grid, work, "the load across hosts")
    return 0


def merge(a, work):
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "4000", "--pace", "5"]
    # n1 asks no work of n2: what is tested is n2's own merge, not a transfer to an idle n1.
    n1 = write_json(os.path.join(work, "n1.json"), agent_config(0, {"enabled": False}, evacuate_load=0))
    n2 = write_json(os.path.join(work, "n2.json"),
                    agent_config(1, evacuate_load=0, ctxsw_threshold=100, stability_window=6))
    with HostCluster("--hosts", "2", "--node-config", f"n1={n1}", "--node-config", f"n2={n2}") as cluster:
        run = launch(cluster, a, work, grid, "-n", "3", "--active-on", "n1,n2,n2", "--max", "4", "--spares-on", "n1")
        try:
            app = registered_app(cluster, a.heat2d)
            # Where the ranks started is what each agent has registered, active or not (n1's spare is world rank
            # 3): n2 may have merged already. Under ASan heat2d registered after n2 had found its node stable, and
            # the merge came at iteration 9, before a first look at the active ranks.
            spread(cluster, app, {"n1": [0, 3], "n2": [1, 2]}, registered=True)
            merged = wait_for(lambda: results_of(cluster, "n1", ok=True, op="merge"), 90, 0.2)
            check(merged and merged[0]["trigger"] == "tick" and merged[0]["origin"] == "n2" and
                  merged[0]["before"] == 3 and merged[0]["after"] == 2,
                  f"n2's decision merges its two processes, by itself, through n1 ({merged and merged[0]})")
            check(merged[0]["why"].startswith("stable node"), f"and says why ({merged[0]['why']})")
            spread(cluster, app, {"n1": [0], "n2": [1]})
            output = finish(run)
            others = [e for e in results_of(cluster, "n1", ok=True) if e["op"] != "merge"]
        finally:
            stop(run)
        no_force_used(cluster, "n1", "n2")
    check(not others, f"nothing else was reconfigured ({others})")
    final = re.findall(r"^final: .*$", output, re.M)
    check(final and final[-1].startswith("final: 2 processes"), f"heat2d ends on 2 processes ({final})")
    check_checksum(a, output, grid, work, "the merge across hosts")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenario", required=True, choices=["drain", "load", "merge"])
    parser.add_argument("--mpi", required=True, choices=["openmpi", "mpich"])
    parser.add_argument("--sigterm", action="store_true", help="drain: by SIGTERM to the agent, not `malleo drain`")
    parser.add_argument("heat2d")
    a = parser.parse_args()
    # meson's timeout sends SIGTERM: the clusters' `with` blocks still take their namespaces down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    why = unavailable()
    if why:
        skip(f"{why}: no hosts can be made here")
    if len(os.sched_getaffinity(0)) < 2:
        skip("the scenarios need two CPUs, one per host")
    work = tempfile.mkdtemp(prefix="malleo-hosts-loop-")
    try:
        return {"drain": drain, "load": load, "merge": merge}[a.scenario](a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
