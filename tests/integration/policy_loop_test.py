# SPDX-License-Identifier: Apache-2.0
"""The `sweetspot` and `swap` decision modules closing the loop on a running heat2d: real malleod processes, real
`mpirun` in pool mode (spares parked by the bridge), real MPI; no `malleo force`, no MALLEO_FORCE.

  sweetspot (one node, Open MPI, `malleo run -n 1 --max 2`): heat2d reports its remaining iterations (PCM_Remaining_iterations); its coordinator's
            poll carries them to the agent, `malleo apps --json` shows them. One run with 600 iterations left: the
            agent's sweetspot grows it onto the parked spare (1 -> 2); the same program with 100 iterations left: the
            same growth is declined (a `stay` action), the seconds it would save over the iterations left being fewer
            than a resize costs. Then with a second node, n2, whose static profile is idler than n1's but which has
            no spare of the application: the growth named n2, the bridge refuses it (pool_exhausted, no spare
            there), and sweetspot decides again, retry_after later, without n2: the spare on n1 is activated.
            Checksums equal a static run's.
  swap      (three nodes, Open MPI or MPICH): heat2d's one active process (world rank 0) on n2, a spare parked on n1.
            `malleo load` puts busy processes on n2's CPU: n2's swap module, which measures its own process's share
            against the rest, first names n3 (idle, the fastest peak, but no spare there): the bridge refuses, and
            it swaps its process with the spare on n1 at once (a migration of one: the spare is activated with the
            data, the process on n2 parks). While the load stays, at most one swap per min_residence. Checksum equal
            to a static run's.

usage: policy_loop_test.py --scenario sweetspot|swap --mpi openmpi|mpich HEAT2D"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from testkit import heat2d_args, heat2d_parser, skip
from harness import MALLEO, TIME_SCALE, Cluster, check, static_profile, wait_for
from loop_test import (active_here, apps, check_checksum, finish, launch, launch_pool, no_force_used,
                       registered_app, results_of, run_env)

UNMEASURED_COST = 3.0
PACE_MS = 30
MIN_RESIDENCE = 6.0
HOLD_DOWN = 2.0


def sweetspot_config(static_apw=None):
    """Decides every half second; a resize is taken to cost UNMEASURED_COST s until one is measured. The node's one
    CPU would cap the size at 1: max_processors allows the spare. With `static_apw`, the node's profile is fixed
    (static profiling) at that APW."""
    config = {"agent": {"decision_interval": 0.5, "profile_interval": 0.5},
              "modules": {"decision": "sweetspot"},
              "host": {"cpus": [0], "pw": 1.0},
              "sweetspot": {"unmeasured_cost": UNMEASURED_COST, "max_processors": 2, "retry_after": 1.0},
              "actions": {"hold_down": HOLD_DOWN}}
    if static_apw is not None:
        config["modules"]["profiling"] = "static"
        config["static"] = static_profile(static_apw)
    return config


def sweetspot_run(a, n1, iterations, work, nodes="n1=0"):
    """heat2d paced at PACE_MS per iteration, launched by `malleo --agent <n1> run -n 1 --max 2`: world rank 0
    active, rank 1 parked, both on n1 (MALLEO_NODE n1, which `malleo run` gives them)."""
    grid = ["--rows", "256", "--columns", "512", "--iterations", str(iterations), "--pace", str(PACE_MS)]
    env = run_env(a.mpi, {"MALLEO_NODES": nodes, "MALLEO_REPORT_INTERVAL": "0.2"})
    known = set(apps(n1))
    run = launch(n1, a.mpi, ["-n", "1", "--max", "2"], a.heat2d, grid, env, work)
    try:
        def new_app():
            fresh = [i for i, app in apps(n1).items() if i not in known and app["malleable"]]
            return fresh[0] if fresh else None
        app = wait_for(new_app, 60, 0.1)
        check(app is not None, f"the {iterations}-iteration run registers and polls")
        seen = wait_for(lambda: apps(n1).get(app) if isinstance(apps(n1).get(app, {}).get("remaining_iterations"),
                                                                    int) else None, 30, 0.05)
        check(seen and 0 < seen["remaining_iterations"] <= iterations,
              f"the remaining iterations reach the agent: `malleo apps --json` says "
              f"{seen and seen.get('remaining_iterations')} of {iterations}")
        shown = n1.cli("apps").stdout
        check(re.search(r"^  remaining  \d+ iterations \(said by the application\)$", shown, re.M),
              f"and `malleo apps` says them\n{shown}")
        decided = wait_for(lambda: [e for e in n1.events("action") if e.get("app") == app], 30, 0.05)
        check(decided, f"sweetspot decides on the {iterations}-iteration run while it runs")
        if decided[0]["kind"] == "grow":
            # What the growth cost, as the bridge measured it, is what the agent weighs the next resize against.
            cost = wait_for(lambda: apps(n1).get(app, {}).get("redistribution_cost"), 30, 0.05)
            result = results_of(n1, app=app, ok=True)
            check(cost and result and cost == result[0]["duration"],
                  f"`malleo apps --json` shows the growth's measured cost, {cost} s")
        output = finish(run)
    finally:
        if run.poll() is None:
            run.kill()
    return app, output, seen, decided[0], grid, env


def sweetspot(a, work):
    with Cluster() as cluster:
        n1 = cluster.add("n1", sweetspot_config())

        # Early: 600 iterations of ~30 ms; growing 1 -> 2 saves at most 15 ms an iteration, some 7 s over what is
        # left, more than the 3 s a resize is taken to cost.
        app, output, seen, first, grid, env = sweetspot_run(a, n1, 600, work)
        reasons = first["reasons"]
        check(first["kind"] == "grow" and first["params"]["size"] == 2 and reasons["remaining_known"] and
              reasons["remaining_iterations"] > 300 and not reasons["cost_measured"] and
              reasons["cost"] == UNMEASURED_COST and reasons["horizon_gain"] > UNMEASURED_COST,
              f"early in the run sweetspot grows it: {first['kind']} {first['params']}, "
              f"{reasons.get('remaining_iterations')} iterations left, gain {reasons.get('horizon_gain')} s "
              f"against {reasons.get('cost')} s")
        grown = results_of(n1, app=app, ok=True, op="split")
        check(grown and grown[0]["before"] == 1 and grown[0]["after"] == 2 and grown[0]["decision"] == "sweetspot" and
              grown[0]["trigger"] == "tick",
              f"the growth is carried out: the spare is activated ({grown[:1]})")
        check(grown[0].get("duration", 0) > 0, f"and its cost measured ({grown[0].get('duration')} s)")
        check_checksum(a, output, grid, env, work, "the growth")

        # Near the end: the same program with 100 iterations left. The same growth would save at most
        # 100 x 15 ms = 1.5 s: declined.
        app2, output2, seen2, first2, grid2, env2 = sweetspot_run(a, n1, 100, work)
        reasons2 = first2["reasons"]
        check(first2["kind"] == "stay" and reasons2["declined"] == "grow" and reasons2["declined_size"] == 2 and
              reasons2["reason"] == "cost-exceeds-gain" and reasons2["remaining_known"] and
              reasons2["remaining_iterations"] <= 100 and reasons2["horizon_gain"] < reasons2["cost"],
              f"near the end sweetspot declines the growth: {first2['kind']} ({reasons2.get('why')})")
        check(not results_of(n1, app=app2, ok=True), "nothing was reconfigured in the short run")
        check("final: 1 processes" in output2, "the short run ends on its 1 process")
        check_checksum(a, output2, grid2, env2, work, "the short run")
        no_force_used(n1)

    with Cluster() as cluster:
        # n2 looks idler (a whole idle core) than n1 (half of one), but the application has no spare there.
        n1 = cluster.add("n1", sweetspot_config(static_apw=0.5))
        n2 = cluster.add("n2", sweetspot_config(static_apw=1.0), seeds=[n1.endpoint])
        check(wait_for(lambda: "n2" in n1.peers_via_cli(), 10), "n2 joins n1")
        app3, output3, _, first3, grid3, env3 = sweetspot_run(a, n1, 600, work, nodes="n1=0;n2=1")
        check(first3["kind"] == "grow" and first3["params"].get("node") == "n2",
              f"sweetspot's first growth names the idlest node, n2: {first3['kind']} {first3['params']}")
        refused = results_of(n1, app=app3, ok=False)
        check(refused and refused[0]["decision"] == "sweetspot" and refused[0].get("node") == "n2" and
              refused[0].get("refusal", {}).get("kind") == "pool_exhausted" and
              refused[0]["refusal"].get("most") == 0,
              f"the bridge refuses it: no spare on n2 ({refused[:1]})")
        grown = results_of(n1, app=app3, ok=True, op="split")
        check(grown and grown[0]["decision"] == "sweetspot" and grown[0].get("node", "") != "n2" and
              grown[0]["before"] == 1 and grown[0]["after"] == 2 and grown[0]["t"] >= refused[0]["t"] + 1.0,
              f"sweetspot decides again, retry_after later and without n2: the spare on n1 is activated "
              f"({grown[:1]})")
        check(not results_of(n1, app=app3, ok=False, node="n2")[1:], "n2 is not named again")
        check_checksum(a, output3, grid3, env3, work, "the growth decided again")
        no_force_used(n1)
    return 0


def swap_config(cpu, pw=1.0):
    """Every node runs `swap`: a swap needs the spare faster by 25 %, and a process stays where it is for
    MIN_RESIDENCE s after it changed state. Peak speeds are set (pw 1 unless said): the load decides. Niced work (the
    builds of a shared machine) yields to heat2d and is not counted as load; `malleo load`'s busy processes are not
    niced."""
    return {"agent": {"decision_interval": 0.5, "profile_interval": 0.5},
            "modules": {"decision": "swap"},
            "host": {"cpus": [cpu], "pw": pw, "niced_is_load": False},
            "swap": {"hysteresis": 0.25, "min_residence": MIN_RESIDENCE},
            "actions": {"hold_down": HOLD_DOWN}}


def swap(a, work):
    grid = ["--rows", "128", "--columns", "256", "--iterations", "5000", "--pace", "8"]
    load_dir = os.path.join(work, "load")
    with Cluster() as cluster:
        n1 = cluster.add("n1", swap_config(0))
        n2 = cluster.add("n2", swap_config(1), seeds=[n1.endpoint])
        # n3 shares n1's CPU with a faster peak: the fastest node to n2, but no process of the application is there.
        n3 = cluster.add("n3", swap_config(0, pw=1.5), seeds=[n1.endpoint])
        check(wait_for(lambda: {"n1", "n3"} <= set(n2.peers_via_cli()), 10), "n2 knows n1 and n3")
        # World rank 0 active on n2, rank 1 parked on n1.
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "1", "MALLEO_PROFILE_DIR": work,
                              "MALLEO_REPORT_INTERVAL": "0.2"})
        run = launch_pool(a, [("n2", n2), ("n1", n1)], grid, env)
        loaded = False
        try:
            app = registered_app(n2, a.heat2d)
            check(wait_for(lambda: active_here(n2, app) == [0], 30, 0.1), "world rank 0 runs on n2")
            # The busy processes must not be niced, or n2 counts their time as idle (niced_is_load false) and sees
            # nothing to flee. A test run under `nice` (as the sanitizer runs are, on a shared machine) would hand
            # its niceness down to them: they are put back to 0 (the tests run as root).
            unniced = ["nice", "-n", str(-os.nice(0))] if os.nice(0) > 0 else []
            r = subprocess.run([*unniced, MALLEO, "--cluster-dir", load_dir, "load", "--cpu-list", "1", "--cpus",
                                "3", "--json"], capture_output=True, text=True, timeout=30 * TIME_SCALE)
            check(r.returncode == 0, f"malleo load: three busy processes on n2's CPU ({r.stderr.strip()})")
            loaded = True
            started = time.monotonic()
            swapped = wait_for(lambda: results_of(n2, ok=True, op="migrate"), 60, 0.1)
            took = time.monotonic() - started
            refused = results_of(n2, ok=False)
            check(refused and refused[0]["node"] == "n3" and refused[0]["decision"] == "swap" and
                  refused[0].get("refusal", {}).get("kind") == "pool_exhausted" and
                  all(e["node"] == "n3" for e in refused),
                  f"n2's first swap names n3, the fastest, and the bridge refuses it: no spare there ({refused[:1]})")
            check(swapped and swapped[0]["kind"] == "swap" and swapped[0]["decision"] == "swap" and
                  swapped[0]["trigger"] == "tick" and swapped[0]["origin"] == "n2" and
                  swapped[0]["from_node"] == "n2" and swapped[0]["node"] == "n1" and swapped[0]["before"] == 1 and
                  swapped[0]["after"] == 1,
                  f"{took:.1f} s into the load n2's swap module swaps its process with n1's spare ({(swapped or [])[:1]})")
            check(swapped[0]["t"] - refused[0]["t"] < MIN_RESIDENCE / 2,
                  f"at once after the refusal, not a residence period later "
                  f"({swapped[0]['t'] - refused[0]['t']:.1f} s)")
            action = [e for e in n2.events("action")
                      if e.get("kind") == "swap" and e["params"]["activate_agent"] == "n1"]
            check(action and action[0]["reasons"]["side"] == "active" and
                  action[0]["reasons"]["ratio"] > 1.25, f"decided on the measured load ({action[0]['reasons']['why']})")
            check(wait_for(lambda: active_here(n1, app) == [1] and not active_here(n2, app), 10, 0.1),
                  f"world rank 1 runs on n1, nothing on n2 (n1 {active_here(n1, app)}, n2 {active_here(n2, app)})")
            # The load stays for three residence periods, a window in which the agents may do anything but swap
            # back and forth: it is what is observed, not a wait for something to happen.
            time.sleep(3 * MIN_RESIDENCE)
            steady = [e["t"] for e in results_of(n2, ok=True)]
            gaps = [y - x for x, y in zip(steady, steady[1:])]
            check(all(g >= MIN_RESIDENCE - 0.5 for g in gaps),
                  f"at most one swap per {MIN_RESIDENCE} s under the steady load: {len(steady)} at t = "
                  f"{[round(t, 1) for t in steady]}")
            check(active_here(n1, app) == [1], "the process stays on n1 while n2 is loaded")
            # n1's swap module, its process on the CPU n1 shares with the faster n3, tries n3 in its turn: each agent
            # learns once what the bridge said.
            origins = [e["origin"] for e in results_of(n2, ok=False)]
            check(sorted(set(origins)) == sorted(origins),
                  f"no agent named n3 again after the bridge's refusal (refused swaps asked by {origins})")
            subprocess.run([MALLEO, "--cluster-dir", load_dir, "load", "--stop"], capture_output=True, timeout=30 * TIME_SCALE)
            loaded = False
            output = finish(run)
            everything = [(e["op"], e.get("from_node"), e.get("node"), e["trigger"], round(e["t"], 1))
                          for e in results_of(n2, ok=True)]
        finally:
            if loaded:
                subprocess.run([MALLEO, "--cluster-dir", load_dir, "load", "--stop"], capture_output=True,
                               timeout=30 * TIME_SCALE)
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2, n3)
    print(f"reconfigurations: {everything}")
    check("final: 1 processes" in output, "heat2d ends on its one process")
    check_checksum(a, output, grid, env, work, "the swap")
    return 0


def main():
    parser = heat2d_parser()
    parser.add_argument("--scenario", required=True, choices=["sweetspot", "swap"])
    a = heat2d_args(parser)
    if a.scenario == "swap" and len(os.sched_getaffinity(0)) < 2:
        skip("the swap scenario needs two CPUs, one per node")
    work = tempfile.mkdtemp(prefix="malleo-policy-")
    status = {"sweetspot": sweetspot, "swap": swap}[a.scenario](a, work)
    shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
