# SPDX-License-Identifier: Apache-2.0
"""The loop closed: agents reconfigure a running heat2d by themselves. Real malleod processes with the `ios` decision
module, each measuring its own CPU (the host profiling module's `cpus`), real `malleo run`, real MPI; no `malleo force`
and no MALLEO_FORCE anywhere. Each scenario ends with heat2d's checksum compared with a static run's.

  join   (Open MPI, spawn mode; MPICH, pool mode, a spare launched parked on n2's CPU before n2's agent starts):
         heat2d runs on n1 alone; n2 joins with n1 as its seed; its work request reaches n1, whose decision splits
         the application onto n2: a process of it runs there within seconds, the iteration rate rises.
  drain  (MPICH or Open MPI, pool mode): heat2d's active processes on n1 and n2, spares on both; `malleo drain n2`
         (or with --sigterm, SIGTERM to n2's agent): n2's decision takes its process off (merges it into n1's, or migrates it to n1's spare), its agent exits
         once it hosts none.
  merge  (MPICH, pool mode): two active processes on n1's one CPU: n1's decision merges them by itself.
  load   (Open MPI or MPICH, pool mode): heat2d on n1 and n2; real CPU hogs pinned to n2's CPU: n2's decision sends its
         process away (a request n2 sends to n1, which hosts rank 0); once the load is steady, at most one
         reconfiguration per hold-down.
  weights (Open MPI or MPICH, pool mode): rank 0 active on n1, rank 1 parked on n2; the nodes' powers fixed by the
         static profiling module, n1 1 and busy, n2 2 and idle, and actions.node_weights on: n2's work request makes
         n1 split the application in two, and the root agent's command carries each node's power, so the bridge
         gives n2's process two thirds of the grid's columns and n1's one third (heat2d's `columns:` line).
  refusal (Open MPI, pool mode): rank 0 active on n1 (power 1, busy), rank 1 parked on n2 (power 3, idle): n2's work
         request makes n1's ios want a split of 3 onto n2 (ρ = 3/4: 4 pieces, 3 of them n2's), whose pool has 1
         spare. The bridge refuses it with its structured reason (`pool_exhausted`, 1 spare); ios splits 1 onto n2
         instead and, n2's pool then empty, asks nothing more of n2 however often n2 asks for work: one refusal in
         the whole run, never the same refused command twice in a row.
  merge_ranks (Open MPI, pool mode): world ranks 0 and 1 active on n1's one CPU, 2 active on n2: n1's ios wants
         its two folded, but under the PCM C API (heat2d's) the processes that stay keep their ranks, so only the
         last slot (n2's) may leave: the bridge refuses with `merge_ranks`, none of n1's may. ios does not propose
         that merge again (without the refusal's reason it did, every `merge_retry`).
  paced  (Open MPI, spawn mode, the default ios options but evacuate_load 0): heat2d paced at 20 ms an iteration on n1; n2 joins. n1
         declines n2's work requests (the split gains only on the little time heat2d computes) and nothing is
         reconfigured: taking n1's used CPU as the application's demand made a split into 50 processes (issue 42).
  share  (Open MPI, pool mode, `ios.origin_units`): world rank 0 active on n1, 1 active on n2, 2 and 3 parked on
         n2; static profiles of equal power, n1 always busy, n2 always idle, so n2 asks for work again and again. Its
         requests say it hosts one unit of heat2d (`hosted`), its share of the two (ρ = 1/2): n1's ios answers none of
         them and nothing is reconfigured. With N_i = 0 (without origin_units, or before requests said what their
         origin hosts) each one made n1 split its process for n2 until n2's spares ran out: an origin that only looks
         idle, its process waiting for n1's, drew work it did not need.
  The drain scenario also sends n1 two requests back to back: the second, while the first is in flight, is refused
  with its reason.

usage: loop_test.py --scenario join|drain|load|merge|weights|refusal|merge_ranks|share|paced --mpi openmpi|mpich [--sigterm] HEAT2D"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types

import zmq

import testkit
from testkit import checksum, heat2d_args, heat2d_parser, skip
from harness import (HOLD_DOWN, MALLEO, TIME_SCALE, Cluster, active_here, apps, check, envelope, frames,
                     ios_agent_config, launch, launch_pool, registered_app, static_profile, wait_for)

RUN_TIMEOUT = 600 * TIME_SCALE
# Iterations timed on each side of the join's split, at the least, for the rates it compares.
RATE_SAMPLES = 20


def run_env(mpi, nodes):
    return testkit.run_env(mpi, nodes, poll_interval="0.1")


def iteration_times(output):
    """(iteration, seconds, processes) of each of rank 0's --times lines, in order."""
    return [(int(i), float(s), int(p)) for i, s, p in
            re.findall(r"^time: iteration (\d+) ([0-9.]+) s on (\d+) processes", output, re.M)]


def finish(run):
    output, _ = run.communicate(timeout=RUN_TIMEOUT)
    check(run.returncode == 0, f"the run ends well ({run.returncode})\n{output[-3000:]}")
    return output


def static_agent_config(apw, pw, **ios):
    """agent_config with the static profiling module: the node's APW and power fixed, whatever its CPU does."""
    c = ios_agent_config(0, **ios)
    del c["host"]
    c["modules"]["profiling"] = "static"
    c["static"] = static_profile(apw, pw)
    return c


def ask_often(config):
    """A short work-stealing cooldown and backoff: an idle node asks every second or two."""
    config["work_stealing"].update({"cooldown": 1.0, "backoff_initial": 0.5, "backoff_max": 2.0})
    return config


def static_checksum(mpi, heat2d, grid, env, work):
    # --pace only sleeps: the static run goes without it.
    if "--pace" in grid:
        grid = grid[:grid.index("--pace")] + grid[grid.index("--pace") + 2:]
    static = subprocess.run(
        [MALLEO, "--agent", "off", "run", "--mpi", mpi, "-n", "1", "--profile-dir", work, "--", heat2d, *grid],
        capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT)
    check(static.returncode == 0, f"the static run ends well\n{static.stdout}{static.stderr}")
    return checksum(static.stdout)


def check_checksum(a, output, grid, env, work, after):
    """heat2d's checksum in `output` equals a static run's of the same grid: the data survived `after`."""
    got, want = checksum(output), static_checksum(a.mpi, a.heat2d, grid, env, work)
    check(got is not None and got == want, f"checksum after {after} {got} == static {want}")


def no_force_used(*agents):
    for agent in agents:
        forced = [e for e in agent.events() if e.get("trigger") == "force"]
        check(not forced, f"{agent.name}: no reconfiguration was forced ({forced[:1]})")


def rate(times):
    """Iterations per second of the median iteration of a list of --times samples (the machine is shared: a mean
    would follow whatever else ran)."""
    seconds = sorted(s for _, s, _ in times)
    return 1.0 / seconds[len(seconds) // 2] if seconds and seconds[len(seconds) // 2] > 0 else 0.0


def join(a, work):
    grid = ["--rows", "2048", "--columns", "4096", "--iterations", "2500"]
    with Cluster() as cluster:
        # Nothing else than the work request decides here: the load rule stays out of a machine shared with builds.
        # Pool mode (MPICH) has one spare on n2: n_max 2 bounds ios's split to what the pool holds (the bridge refuses
        # more), and tolerance 1 accepts that one even split for any power ratio in [0.25, 0.75].
        # Both nodes' power is set to 1: an even split onto n2 gains only if n2 is not measured much slower, and the
        # start-up calibration of a CPU shared with other work can say half (a split into more pieces, as spawn
        # mode makes, still pays).
        pool = {"n_max": 2, "tolerance": 1.0} if a.mpi == "mpich" else {}

        def config(cpu):
            c = ios_agent_config(cpu, evacuate_load=0, **pool)
            if pool:
                c["host"]["pw"] = 1.0
            return c
        n1 = cluster.add("n1", config(0))
        n2_dir = os.path.join(cluster.dir, "n2")
        n2_local = f"ipc://{n2_dir}/agent.sock"
        if a.mpi == "openmpi":
            env = run_env(a.mpi, {"MALLEO_PCM_MODE": "spawn", "MALLEO_NODE": "n1", "MALLEO_NODES": "n1=0;n2=1",
                                  "MALLEO_NODE_AGENTS": f"n1={n1.local};n2={n2_local}"})
            run = launch(n1, a.mpi, ["-n", "1"], a.heat2d, grid, env, work)
        else:
            # MPICH has no spawn: world rank 1 is launched parked on n2's CPU, reporting to the agent n2 will run,
            # which is not there yet; it registers once n2 joins, and the split activates it.
            env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "1", "MALLEO_PROFILE_DIR": work})
            run = launch_pool(a, [("n1", n1), ("n2", types.SimpleNamespace(local=n2_local))], grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            # Some iterations of the application alone on n1, so that its rate before the join is measured: three
            # progress events, a second each, from its coordinator's polls, and as many iterations as the rate below
            # needs (the first 5 and the last on one process are not counted). A second is not that many iterations
            # in a slow build on a busy machine (the sanitizer build at a load of 40: 22).
            check(wait_for(lambda: len(n1.events("app_progress")) >= 3
                           and max(e.get("iteration", 0) for e in n1.events("app_progress")) >= RATE_SAMPLES + 6,
                           30, 0.1),
                  f"n1 reports the application's progress, past iteration {RATE_SAMPLES + 6}")
            joined = time.monotonic()
            n2 = cluster.add("n2", config(1), seeds=[n1.endpoint])
            arrived = wait_for(lambda: active_here(n2, app), 60, 0.1)
            took = time.monotonic() - joined
            check(arrived, f"within {took:.1f} s of n2's join a process of the application runs on n2 ({arrived})")
            results = wait_for(lambda: [e for e in n1.events("reconf_result") if e.get("ok")], 30, 0.1) or []
            check(results and results[0]["op"] == "split" and results[0].get("node") == "n2" and
                  results[0]["trigger"] == "wrm" and results[0]["decision"] == "ios",
                  f"n1's decision on n2's work request split the application onto n2 ({results[:1]})")
            check(results[0].get("why", "").startswith("work request from n2"),
                  f"the result says why ({results[0].get('why')})")
            size = results[0]["after"]
            on_n2 = active_here(n2, app)
            check(len(on_n2) <= 1, f"n2, one CPU, runs at most one process of heat2d ({on_n2})")
            output = finish(run)
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
    times = iteration_times(output)
    before = [t for t in times if t[2] == 1][5:-1]
    after = [t for t in times if t[2] == size][5:]
    check(len(before) >= RATE_SAMPLES and len(after) >= RATE_SAMPLES,
          f"iterations timed before ({len(before)}) and after ({len(after)})")
    check(rate(after) > 1.2 * rate(before),
          f"the iteration rate rises: {rate(before):.1f} it/s on 1 process, {rate(after):.1f} it/s on {size}")
    check_checksum(a, output, grid, env, work, "the split")
    return 0


def send_in_order(cluster, sender, receiver, messages):
    """Messages one after the other on one connection, as a peer's DEALER sends them: they arrive in order. Sent
    with the key of node `sender` to the agent `receiver`, as that peer's would be."""
    s = zmq.Context.instance().socket(zmq.DEALER)
    cluster.as_node(s, sender, receiver.name)
    endpoint = receiver.endpoint
    s.setsockopt(zmq.LINGER, 1000)
    s.setsockopt(zmq.IDENTITY, b"loop-test")
    s.connect(endpoint)
    for parts in messages:
        s.send_multipart(parts)
    s.close()


def verdicts_on(agent, origin):
    """What `agent` did with `origin`'s work requests: answered, expired, a dead end or passed on."""
    return [e for e in agent.events() if e.get("type") in ("wrm_answered", "wrm_expired", "wrm_dead_end",
                                                          "wrm_forwarded") and e.get("origin") == origin]


def results_of(agent, **match):
    return [e for e in agent.events("reconf_result") if all(e.get(k) == v for k, v in match.items())]


def drain(a, work):
    """Pool mode: world ranks 0 (n1) and 1 (n2) active, 2 (n1) and 3 (n2) spare. Two requests sent back to back to
    n1, which hosts rank 0: the second is refused, the application busy with the first. Then `malleo drain n2`."""
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "2500", "--pace", "8"]
    with Cluster() as cluster:
        n1 = cluster.add("n1", ios_agent_config(0, evacuate_load=0))
        n2 = cluster.add("n2", ios_agent_config(1, evacuate_load=0), seeds=[n1.endpoint])
        check(wait_for(lambda: "n1" in n2.peers_via_cli(), 10), "n2 joins n1")
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "2", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n2", n2), ("n1", n1), ("n2", n2)], grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            check(wait_for(lambda: active_here(n2, app) == [1], 30, 0.1), "world rank 1 runs on n2")

            # As an agent would ask: the first cannot be done (n2 runs one process), the bridge says so; the second
            # comes while the first waits for the coordinator's poll.
            first = envelope("reconf_request", "n2", 1, app=app, request=901, op="migrate", count=5,
                             from_node="n2", node="n1", trigger="drain", kind="migrate", why="test: too many")
            second = envelope("reconf_request", "n2", 2, app=app, request=902, op="merge", count=1,
                              trigger="tick", kind="merge", why="test: second")
            send_in_order(cluster, "n2", n1, [frames(first), frames(second)])
            busy = wait_for(lambda: results_of(n1, request=902), 10, 0.1)
            check(busy and not busy[0]["ok"] and busy[0]["code"] == "busy" and "already has command" in busy[0]["text"],
                  f"a second request while one is in flight is refused with its reason ({busy and busy[0]})")
            refused = wait_for(lambda: results_of(n1, request=901), 20, 0.1)
            check(refused and not refused[0]["ok"] and "only 1 active process on node 'n2'" in refused[0]["text"],
                  f"the bridge refuses what it cannot do, and says why ({refused and refused[0].get('text')})")
            told = wait_for(lambda: results_of(n2, request=901) and results_of(n2, request=902), 10, 0.1)
            check(told, "both results reach the agent that asked (n2)")

            started = time.monotonic()
            if a.sigterm:
                # As an operator's `systemctl stop` or a job scheduler would: the signal drains the node first.
                n2.proc.send_signal(signal.SIGTERM)
                check(wait_for(lambda: not n2.alive(), 90), "n2's agent exits after SIGTERM")
            else:
                r = subprocess.run([MALLEO, "--agent", n2.local, "drain", "--wait", "90", "--json"],
                                   capture_output=True, text=True, timeout=120)
                drained = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}
                check(r.returncode == 0 and drained.get("type") == "drained",
                      f"malleo drain n2 --wait: n2 hosts no active process ({r.returncode}: {r.stdout.strip()} "
                      f"{r.stderr.strip()})")
                check(wait_for(lambda: not n2.alive(), 15), "n2's agent exits once it hosts no active process")
            check(n2.proc.returncode == 0, f"n2's agent exits with status 0 ({n2.proc.returncode})")
            took = time.monotonic() - started
            moved = results_of(n1, ok=True, trigger="drain")
            # ios folds a draining node's processes into the application's others (a merge, no spare needed), or
            # migrates them when they are all it has.
            check(moved and moved[0]["op"] in ("merge", "migrate") and moved[0]["from_node"] == "n2" and
                  moved[0]["origin"] == "n2" and moved[0]["decision"] == "ios",
                  f"n2's decision took its process away, through n1 ({moved[:1]})")
            last_active = [e for e in n2.events() if e.get("type") in ("drained", "drain_deadline")]
            check(last_active and last_active[-1]["type"] == "drained",
                  f"n2 left drained, not at its deadline, {took:.1f} s after {'SIGTERM' if a.sigterm else 'malleo drain'}")
            # A migration activates n1's spare (world rank 2); a merge leaves rank 0 alone.
            left = [0, 2] if moved and moved[0]["op"] == "migrate" else [0]
            check(wait_for(lambda: sorted(active_here(n1, app)) == left, 10, 0.2),
                  f"n1 runs world ranks {left} ({active_here(n1, app)})")
            output = finish(run)
            merges = results_of(n1, ok=True, op="merge")
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
    final = re.findall(r"^final: .*$", output, re.M)
    check(final and final[-1].startswith(f"final: {2 - len(merges)} processes"),
          f"heat2d ends on its 2 processes, less those n1's merges took ({final}, {len(merges)} merges)")
    check_checksum(a, output, grid, env, work, "the drain")
    return 0


def cpu_hogs(cpu, count):
    """`count` busy loops pinned to `cpu`: real CPU load that is no application's."""
    loop = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(count)]


def load(a, work):
    """Pool mode: world ranks 0 (n1) and 1 (n2) active, 2 (n1) and 3 (n2) spare. Three busy loops pinned to n2's CPU:
    n2's decision sends its process away, through n1 (which hosts rank 0), and nothing bounces while the load lasts."""
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "3000", "--pace", "8"]
    with Cluster() as cluster:
        # The load must last 3 s before processes leave: a build on the machine is load too, but a passing one. n1
        # does not leave its CPU for load: on a machine shared with builds it could find some on CPU 0 too.
        n1 = cluster.add("n1", ios_agent_config(0, evacuate_load=0))
        n2 = cluster.add("n2", ios_agent_config(1, evacuate_ticks=6), seeds=[n1.endpoint])
        check(wait_for(lambda: "n1" in n2.peers_via_cli(), 10), "n2 joins n1")
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "2", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n2", n2), ("n1", n1), ("n2", n2)], grid, env)
        hogs = []
        try:
            app = registered_app(n1, a.heat2d)
            check(wait_for(lambda: active_here(n2, app) == [1], 30, 0.1), "world rank 1 runs on n2")
            loaded = time.monotonic()
            hogs = cpu_hogs(1, 3)
            left = wait_for(lambda: not active_here(n2, app), 30, 0.1)
            check(left, f"under the load the application's process leaves n2 within {time.monotonic() - loaded:.1f} s")
            # n2's decision sends it to n1 (migrate), or folds it into another process of n2 first when one came
            # there meanwhile (merge); either is a request n2 sent to n1, which hosts rank 0.
            moved = wait_for(lambda: results_of(n1, ok=True, origin="n2", from_node="n2", trigger="tick"), 10, 0.1)
            check(moved and moved[0]["op"] in ("migrate", "merge") and moved[0]["decision"] == "ios",
                  f"n2's own decision asked n1, which hosts rank 0, to move it ({moved and moved[0]})")
            check(any("used by processes of no application" in m["why"] for m in moved),
                  f"and said why: the load ({[m['why'] for m in moved]})")
            # The load stays for four hold-downs, a window in which the agents may do anything but oscillate: it is
            # what is observed, not a wait for something to happen.
            time.sleep(4 * HOLD_DOWN)
            for hog in hogs:
                hog.kill()
            steady = [e["t"] for e in results_of(n1, ok=True)]
            gaps = [b - a_ for a_, b in zip(steady, steady[1:])]
            check(all(g >= HOLD_DOWN - 0.5 for g in gaps),
                  f"at most one reconfiguration per hold-down ({HOLD_DOWN} s) under the steady load: "
                  f"{len(steady)} at t = {[round(t, 1) for t in steady]}")
            output = finish(run)
            everything = [(e["op"], e.get("from_node"), e.get("node"), e["trigger"]) for e in results_of(n1, ok=True)]
        finally:
            for hog in hogs:
                hog.kill()
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
    print(f"reconfigurations: {everything}")
    check_checksum(a, output, grid, env, work, "the load")
    return 0


def merge(a, work):
    """Pool mode on one node: world ranks 0 and 1 active on n1, whose one CPU they share, 2 and 3 spare. Nothing else
    changes: ios's merge rule (a stable node, more processes than cores, many context switches) folds them."""
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "4000", "--pace", "5"]
    with Cluster() as cluster:
        n1 = cluster.add("n1", ios_agent_config(0, evacuate_load=0, ctxsw_threshold=100, stability_window=6))
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0", "MALLEO_POOL_ACTIVE": "2", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1)] * 4, grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            check(wait_for(lambda: sorted(active_here(n1, app)) == [0, 1], 30, 0.1), "ranks 0 and 1 share n1's CPU")
            merged = wait_for(lambda: results_of(n1, ok=True, op="merge"), 60, 0.2)
            check(merged and merged[0]["trigger"] == "tick" and merged[0]["before"] == 2 and merged[0]["after"] == 1,
                  f"n1's decision merges them, by itself ({merged and merged[0]})")
            check(merged[0]["why"].startswith("stable node"), f"and says why ({merged[0]['why']})")
            output = finish(run)
            others = [e for e in results_of(n1, ok=True) if e["op"] != "merge"]
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1)
    check(not others, f"nothing else was reconfigured ({others})")
    check_checksum(a, output, grid, env, work, "the merge")
    return 0


def weights(a, work):
    columns = 1024
    grid = ["--rows", "512", "--columns", str(columns), "--iterations", "1500", "--pace", "4"]
    power = {"n1": 1.0, "n2": 2.0}

    def config(node, apw):
        # ρ = 2/3 for n2's request; n_max 2 allows only the split in two, whose predicted imbalance (0.5) the
        # tolerance accepts.
        c = static_agent_config(apw, power[node], evacuate_load=0, n_max=2, tolerance=1.0)
        c["actions"]["node_weights"] = True
        return c
    with Cluster() as cluster:
        n1 = cluster.add("n1", config("n1", 0.0))
        n2 = cluster.add("n2", config("n2", 1.0), seeds=[n1.endpoint])
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "1", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n2", n2)], grid, env)
        try:
            registered_app(n1, a.heat2d)
            results = wait_for(lambda: [e for e in n1.events("reconf_result") if e.get("ok")], 60, 0.1) or []
            check(results and results[0]["op"] == "split" and results[0].get("node") == "n2" and
                  results[0]["trigger"] == "wrm" and results[0]["after"] == 2,
                  f"n1's decision on n2's work request splits the application in two onto n2 ({results[:1]})")
            output = finish(run)
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
    shares = {int(w): int(c) for c, w in re.findall(r"(\d+) \(world rank (\d+)\)",
                                                    next((l for l in output.splitlines() if l.startswith("columns:")),
                                                         ""))}
    # World rank 0 runs on n1, 1 on n2 (launch_pool's blocks): each gets the columns in proportion to its node's power.
    want = {0: columns * power["n1"] / sum(power.values()), 1: columns * power["n2"] / sum(power.values())}
    check(set(shares) == {0, 1} and all(abs(shares[r] - want[r]) <= 1 for r in want),
          f"the grid is shared by node power: columns per world rank {shares}, want {want}")
    check_checksum(a, output, grid, env, work, "the weighted split")
    return 0


def refusal(a, work):
    grid = ["--rows", "512", "--columns", "1024", "--iterations", "6000", "--pace", "4"]
    power = {"n1": 1.0, "n2": 3.0}

    def config(node, apw):
        # Static profiles: n1 always busy, n2 always idle, so n2 asks for work again and again, and every request
        # reaches n1's ios with the same ρ = 3/4.
        return ask_often(static_agent_config(apw, power[node], evacuate_load=0))
    with Cluster() as cluster:
        n1 = cluster.add("n1", config("n1", 0.0))
        n2 = cluster.add("n2", config("n2", 1.0), seeds=[n1.endpoint])
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "1", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n2", n2)], grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            refused = wait_for(lambda: [e for e in results_of(n1, app=app, ok=False) if e.get("code") == "failed"],
                               60, 0.1) or []
            check(refused and refused[0]["op"] == "split" and refused[0]["count"] == 3 and
                  refused[0].get("node") == "n2" and refused[0]["trigger"] == "wrm" and
                  refused[0].get("refusal") == {"kind": "pool_exhausted", "most": 1},
                  f"n1's ios asks for a split of 3 onto n2, which the bridge refuses with its reason ({refused[:1]})")
            done = wait_for(lambda: results_of(n1, app=app, ok=True), 60, 0.1) or []
            check(done and done[0]["op"] == "split" and done[0]["count"] == 1 and done[0].get("node") == "n2" and
                  done[0]["after"] == 2 and done[0]["decision"] == "ios",
                  f"then a split of 1, the spare n2 has, is carried out ({done[:1]}; refused until then: "
                  f"{[(e['op'], e['count']) for e in results_of(n1, app=app, ok=False)]})")
            check(wait_for(lambda: active_here(n2, app) == [1], 30, 0.1), "world rank 1 runs on n2")
            def asked_after():
                return [e for e in verdicts_on(n1, "n2") if e["t"] > done[0]["t"]]
            check(wait_for(lambda: len(asked_after()) >= 5, 60, 0.1),
                  f"n2 asks n1 for work again and again after the split ({len(asked_after())} requests)")
            last = apps(n1).get(app, {}).get("last_result") or {}
            output = finish(run)
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
        results = [e for e in n1.events("command_result") if e.get("app") == app]
        told = [e for e in results_of(n1, app=app) if e.get("code") == "failed"]
        wanted = [e for e in n1.events("action") if e.get("kind") == "split" and e.get("app") == app]
    summary = [(e["op"], e["count"], e.get("node"), e["ok"], (e.get("refusal") or {}).get("kind")) for e in results]
    print(f"n1's commands: {summary}; splits ios chose: {[w['params'].get('r') for w in wanted]}")
    refusals = [e for e in results if not e["ok"]]
    check(len(refusals) == 1 and len(told) == 1,
          f"the bridge refused one command in the whole run ({len(refusals)} command_result, {len(told)} "
          f"reconf_result refusals): ios did not ask again for what it was told n2's pool cannot give")
    again = [(x["op"], x["count"]) for x, y in zip(results, results[1:])
             if not x["ok"] and not y["ok"] and (x["op"], x["count"], x.get("node"), x.get("refusal")) ==
             (y["op"], y["count"], y.get("node"), y.get("refusal"))]
    check(not again, f"never the same refused command twice in a row ({again})")
    check(last.get("ok") is True and last.get("count") == 1, f"`malleo apps` shows the split as the last result ({last})")
    check(len(wanted) >= 2 and wanted[0]["params"]["r"] == 3 and all(w["params"]["r"] == 1 for w in wanted[1:]) and
          wanted[1]["reasons"]["r_wanted"] == 3,
          f"ios's later splits are capped at the spare the bridge said n2 has (r: {[w['params'].get('r') for w in wanted]})")
    check_checksum(a, output, grid, env, work, "the refusal and the split")
    return 0


def merge_ranks(a, work):
    # 8000 iterations at 4 ms: ten progress events must follow the refusal, which came 12 s into a busy CI run.
    grid = ["--rows", "512", "--columns", "1024", "--iterations", "8000", "--pace", "4"]
    retry = 2.0

    def config(cpu, **ios):
        c = ios_agent_config(cpu, evacuate_load=0, merge_retry=retry, **ios)
        # Nothing but the merge rule decides: no work requests (n2's CPU is partly idle under a paced heat2d).
        c["work_stealing"]["enabled"] = False
        return c
    with Cluster() as cluster:
        n1 = cluster.add("n1", config(0, ctxsw_threshold=100, stability_window=6))
        n2 = cluster.add("n2", config(1), seeds=[n1.endpoint])
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "3", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n1", n1), ("n2", n2)], grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            check(wait_for(lambda: sorted(active_here(n1, app)) == [0, 1] and active_here(n2, app) == [2], 30, 0.1),
                  "ranks 0 and 1 share n1's CPU, 2 runs on n2")
            refused = wait_for(lambda: [e for e in results_of(n1, app=app, ok=False) if e.get("code") == "failed"],
                               60, 0.1) or []
            check(refused and refused[0]["op"] == "merge" and refused[0].get("from_node") == "n1" and
                  refused[0]["trigger"] == "tick" and refused[0].get("refusal") == {"kind": "merge_ranks", "most": 0},
                  f"n1's ios asks to merge its processes, which the PCM C API cannot do ({refused[:1]})")

            # Ten of the application's progress events after the refusal, one a second: five merge_retry periods.
            def progress_after():
                return [e for e in n1.events("app_progress") if e.get("app") == app and e["t"] > refused[0]["t"]]
            check(wait_for(lambda: len(progress_after()) >= 10, 60, 0.1),
                  f"the application runs on after the refusal ({len(progress_after())} progress events)")
            output = finish(run)
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
        results = [e for e in n1.events("command_result") if e.get("app") == app]
        merges = [e for e in n1.events("action") if e.get("kind") == "merge" and e.get("app") == app]
    print(f"n1's commands: {[(e['op'], e['count'], e['ok'], (e.get('refusal') or {}).get('kind')) for e in results]}; "
          f"merges proposed at t = {[round(e['t'], 1) for e in merges]}")
    check(len(results) == 1 and not results[0]["ok"],
          f"one command in the whole run, the refused merge: ios did not propose it again ({len(results)} results, "
          f"{len(merges)} merges proposed)")
    check("final: 3 processes" in output, "heat2d ends on its 3 processes")
    check_checksum(a, output, grid, env, work, "the refused merge")
    return 0


def share(a, work):
    grid = ["--rows", "512", "--columns", "1024", "--iterations", "4000", "--pace", "4"]

    def config(apw):
        return ask_often(static_agent_config(apw, 1.0, evacuate_load=0, origin_units=True))
    with Cluster() as cluster:
        n1 = cluster.add("n1", config(0.0))
        n2 = cluster.add("n2", config(1.0), seeds=[n1.endpoint])
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "2", "MALLEO_PROFILE_DIR": work})
        run = launch_pool(a, [("n1", n1), ("n2", n2), ("n2", n2), ("n2", n2)], grid, env)
        try:
            app = registered_app(n1, a.heat2d)
            def considered():
                """n1's verdicts on n2's requests once n1 knows the application is malleable."""
                return [e for e in verdicts_on(n1, "n2") if any(c.get("app") == app for c in
                                                                 e.get("reasons", {}).get("apps", []))]
            # Until the spares' first reports say they are parked, n2 counts them as its active processes.
            check(wait_for(lambda: active_here(n1, app) == [0] and active_here(n2, app) == [1], 30, 0.1),
                  "rank 0 runs on n1, rank 1 on n2")
            settled = len(considered())
            check(wait_for(lambda: len(considered()) >= settled + 5, 60, 0.1),
                  f"n2 asks n1 for work again and again ({len(considered()) - settled} requests weighed for {app})")
            verdicts = considered()
            output = finish(run)
        finally:
            if run.poll() is None:
                run.kill()
        no_force_used(n1, n2)
        actions = [e for e in n1.events("action") if e.get("app") == app]
        results = [e for e in n1.events("command_result") if e.get("app") == app]
    weighed = [next(c for c in e["reasons"]["apps"] if c.get("app") == app) for e in verdicts[settled + 1:]]
    print(f"n1 weighed {len(weighed)} of n2's requests: {[(c.get('n_i'), c.get('n_j'), c.get('outcome')) for c in weighed[:3]]}")
    check(all(c.get("n_i") == 1 and c.get("n_j") == 1 for c in weighed),
          f"each request says n2 hosts one unit, n1 one ({[(c.get('n_i'), c.get('n_j')) for c in weighed]})")
    check(all(e["type"] != "wrm_answered" for e in verdicts) and
          all("already hosts its share" in c.get("outcome", "") for c in weighed),
          f"n1 answers none: n2 already hosts its share ({[c.get('outcome') for c in weighed[:2]]})")
    check(not actions and not results,
          f"nothing reconfigured: {len(actions)} actions, {len(results)} commands ({actions[:1]})")
    check("final: 2 processes" in output, "heat2d ends on its 2 processes")
    check_checksum(a, output, grid, env, work, "the requests n1 declined")
    return 0


def paced(a, work):
    """issue 42's runaway split: heat2d paced at 20 ms an iteration (computing for a small part of each) runs on n1,
    and n2, one CPU, joins. Taking n1's used CPU as the application's demand, ρ came near 1 and n1 split heat2d into
    50 processes, 49 of them on n2's one CPU, for no gain. With the default ios configuration n1 answers none of n2's
    work requests: the split would gain its share of the little time heat2d computes, below theta."""
    grid = ["--iterations", "1500", "--pace", "20"]
    with Cluster() as cluster:
        # ios's defaults but the load rule, which a machine shared with builds sets off (as in join).
        n1 = cluster.add("n1", ios_agent_config(0, evacuate_load=0))
        n2_local = f"ipc://{os.path.join(cluster.dir, 'n2')}/agent.sock"
        env = run_env(a.mpi, {"MALLEO_PCM_MODE": "spawn", "MALLEO_NODE": "n1", "MALLEO_NODES": "n1=0;n2=1",
                              "MALLEO_NODE_AGENTS": f"n1={n1.local};n2={n2_local}"})
        run = launch(n1, a.mpi, ["-n", "1"], a.heat2d, grid, env, work)
        try:
            app = registered_app(n1, a.heat2d)
            # Its CPU measured: two progress events, a second each.
            check(wait_for(lambda: len(n1.events("app_progress")) >= 2, 30, 0.1), "n1 reports the progress")
            n2 = cluster.add("n2", ios_agent_config(1), seeds=[n1.endpoint])

            def declined():
                return [e for e in n1.events() if e.get("origin") == "n2" and "reasons" in e
                        and e.get("type") != "wrm_answered"
                        and any("would not pay" in p.get("outcome", "") for p in e["reasons"].get("apps", []))]
            check(wait_for(lambda: declined(), 60, 0.2),
                  f"n1 declines n2's work request: the split would not pay ({declined()[:1]})")
            reasons = declined()[0]["reasons"]["apps"][0]
            check(reasons.get("r", 0) <= 1, f"the split n1 weighed puts at most 1 process on n2's one CPU ({reasons})")
            output = finish(run)  # n2 asks again while heat2d runs its 30 s
            declines = declined()
            check(not active_here(n2, app), "no process of heat2d ran on n2")
        finally:
            if run.poll() is None:
                run.kill()
        answered = [e for e in n1.events("wrm_answered") if e.get("origin") == "n2"]
        splits = [e for e in n1.events("action") + n2.events("action") if e.get("kind") in ("split", "transfer")]
        results = n1.events("reconf_result")
        no_force_used(n1, n2)
    check(not answered, f"n1 answered none of n2's work requests; it declined {len(declines)} ({answered[:1]})")
    check(not splits and not results, f"nothing reconfigured: {len(splits)} actions, {len(results)} results "
                                      f"({splits[:1]})")
    check("final: 1 processes" in output, f"heat2d ends on its one process ({output[-300:]})")
    return 0


def main():
    parser = heat2d_parser()
    parser.add_argument("--scenario", required=True, choices=["join", "drain", "load", "merge", "weights", "refusal",
                                                                 "merge_ranks", "share", "paced"])
    parser.add_argument("--sigterm", action="store_true", help="drain: by SIGTERM to the agent, not `malleo drain`")
    a = heat2d_args(parser)
    if len(os.sched_getaffinity(0)) < 2:
        skip("the scenarios need two CPUs, one per node")
    work = tempfile.mkdtemp(prefix="malleo-loop-")
    status = {"join": join, "drain": drain, "load": load, "merge": merge, "weights": weights,
              "refusal": refusal, "merge_ranks": merge_ranks, "share": share, "paced": paced}[a.scenario](a, work)
    shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
