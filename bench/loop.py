#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The loop's benchmarks (docs/performance.md, "The loop"): real malleod processes with the `ios` decision module,
real `malleo run` / `mpirun`, real heat2d, as tests/integration/loop_test.py sets them up; each measure repeated
--rounds times, median [min–max] reported.

  join   Open MPI, spawn mode. heat2d (--rows 2048 --columns 4096) runs on n1 alone; after 3 s a second malleod, n2,
         starts with n1 as its seed (n1 measures CPU 0 alone, n2 CPU 1). Measured from the moment the benchmark
         starts n2's malleod to the *first iteration computed on n2*: the arrival of rank 0's `--times` line of the
         first iteration on 2 processes, at or after the iteration of n1's `reconf_result` (ok, split, node n2).
         rank 0 prints that line after its step, which needed the ghost column the new process on n2 sent in that
         iteration; the new process's own step ends at about the same time. The breakdown puts the agents' events on
         the benchmark's clock (each events.jsonl's `log_started` `wall` + `t`): n2 started, joined, sent its work
         request; n1 answered it (`wrm_answered`), queued the command, the coordinator's poll took it
         (`command_sent`), the result came back (`reconf_result`); then the first iteration on n2.
  drain  Open MPI (or --mpi mpich), pool mode. heat2d (--rows 1024 --columns 2048 --pace 8) as one MPMD job: world
         ranks 0 (n1) and 1 (n2) active, 2 (n1) and 3 (n2) spare. Measured from invoking `malleo drain` on n2 (no
         --wait: it returns at once) to the exit of n2's malleod, seen by a thread blocked in waitpid. Breakdown: n2
         `draining`, n1's `command_queued` and `command_sent`, n1's `reconf_result` (migrate from n2), n2 `drained`,
         the exit.
  cost   heat2d on --cost-ranks processes (default 2: both cores), --cost-iterations iterations of the 2048 x 4096
         grid, no reconfiguration (one agent, nothing to steal; a round where any command was queued is reported and
         left out of the figures). Variants, run in turn within each round (the order reversed every other round):
           agents    the agent running (default configuration, `ios`, whole-host profiling, started before the run and
                     stopped after it, outside the timing), `malleo --agent AGENT run`: libmalleo_pmpi preloaded with
                     MALLEO_PROFILE=full, reports every MALLEO_REPORT_INTERVAL (1 s), the PCM bridge polling the agent
                     every MALLEO_POLL_INTERVAL (0.2 s);
           off       no agent, `MALLEO_PROFILE=off malleo --agent off run`: the same launcher, options and preload,
                     every wrapper a direct jump, the bridge with no agent to poll;
           plain     `mpirun.openmpi --oversubscribe --mca pml ob1 -n R heat2d`: no malleo at all;
         and, to find where a cost comes from: agents-poll1 (MALLEO_POLL_INTERVAL=1), agents-report10
         (MALLEO_REPORT_INTERVAL=10), agents-noprofile (the agent, MALLEO_PROFILE=off), agent-idle (the agent
         running, the application run as `off`: what the agent's own CPU costs). Figures: the wall time of the whole
         `malleo run`, the sum of rank 0's --times iteration seconds (the computation, launch and MPI_Init left
         out), the median iteration, and CPU seconds: user + system of the run's processes (launcher included,
         getrusage of the reaped children) and of the agent during the run (/proc/PID/stat); ratios variant / `off`
         of the same round. On a shared machine the wall ratios spread widely; the CPU seconds much less, but with
         2 ranks Open MPI's waits spin, so their CPU grows when a peer is descheduled (--cost-ranks 1 has no peer).

usage: bench/loop.py [--build build] [--rounds 5] [--scenario join,drain,cost] [--cost-rounds 9]
                     [--cost-ranks 2] [--cost-iterations 800] [--variants agents,off,plain] [--mpi openmpi|mpich]
Needs /usr/bin/python3 with python3-zmq and python3-msgpack (python/harness.py) and a build with
heat2d_openmpi (meson compile -C build). Prints one line per round and a summary; --json FILE keeps every record."""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from testkit import Lines, first_event, loadavg, run_env, stop, summary, walled_events  # noqa: E402


def setup_paths(build):
    build = os.path.abspath(build)
    os.environ["MALLEOD"] = os.path.join(build, "agent", "daemon", "malleod")
    os.environ["MALLEO"] = os.path.join(build, "cli", "malleo")
    sys.dont_write_bytecode = True  # no __pycache__ beside the tests
    return build


TIMES = re.compile(r"^time: iteration (\d+) ([0-9.]+) s on (\d+) processes")


def join_round(a, h, work):
    grid = ["--rows", "2048", "--columns", "4096", "--iterations", "100000"]
    with h.Cluster() as cluster:
        n1 = cluster.add("n1", h.ios_agent_config(0, evacuate_load=0))
        n2_dir = os.path.join(cluster.dir, "n2")
        env = run_env("openmpi", {"MALLEO_PCM_MODE": "spawn", "MALLEO_NODE": "n1", "MALLEO_NODES": "n1=0;n2=1",
                                  "MALLEO_NODE_AGENTS": f"n1={n1.local};n2=ipc://{n2_dir}/agent.sock"}, "0.1")
        run = h.launch(n1, "openmpi", ["-n", "1"], a.heat2d, grid, env, work)
        out = Lines(run, clock=time.time)
        try:
            app = h.registered_app(n1, a.heat2d)
            time.sleep(3)
            started = time.time()
            n2 = cluster.add("n2", h.ios_agent_config(1, evacuate_load=0), seeds=[n1.endpoint])
            got = out.first(lambda line: (m := TIMES.match(line)) and int(m.group(3)) >= 2 and m, 60)
            if not got:
                raise RuntimeError(f"no iteration on 2 processes within 60 s\n{out.text()[-2000:]}")
            arrived, _, m = got
            iteration = int(m.group(1))
            result = h.wait_for(lambda: first_event(walled_events(n1.run_dir), "reconf_result", ok=True), 10, 0.05)
            stop(run, 20)
            e1, e2 = [e for e in walled_events(n1.run_dir) if e["wall"] >= started], walled_events(n2.run_dir)
        finally:
            stop(run, 20)
        if not result or result.get("op") != "split" or result.get("node") != "n2" or result.get("trigger") != "wrm":
            raise RuntimeError(f"not a split onto n2 on n2's work request: {result}")
        if iteration < result.get("iteration", -1):
            raise RuntimeError(f"2 processes at iteration {iteration}, before the split's {result.get('iteration')}")
        marks = {"n2 started": first_event(e2, "started"), "n2 joined": first_event(e2, "joined"),
                 "n2 wrm_sent": first_event(e2, "wrm_sent"), "n1 wrm_answered": first_event(e1, "wrm_answered"),
                 "n1 command_queued": first_event(e1, "command_queued", app=app),
                 "n1 command_sent": first_event(e1, "command_sent", app=app),
                 "n2 app_registered": first_event(e2, "app_registered"), "n1 reconf_result": result}
        record = {"scenario": "join", "total": arrived - started, "split_iteration": result.get("iteration"),
                  "first_iteration_on_2": iteration, "load": loadavg(),
                  "steps": {k: (v["wall"] - started if v else None) for k, v in marks.items()}}
        record["steps"]["first iteration on n2"] = arrived - started
        record["split_duration"] = result.get("duration")
        return record


def drain_round(a, h, work):
    grid = ["--rows", "1024", "--columns", "2048", "--iterations", "100000", "--pace", "8"]
    with h.Cluster() as cluster:
        n1 = cluster.add("n1", h.ios_agent_config(0, evacuate_load=0))
        n2 = cluster.add("n2", h.ios_agent_config(1, evacuate_load=0), seeds=[n1.endpoint])
        if not h.wait_for(lambda: "n1" in n2.peers_via_cli(), 10):
            raise RuntimeError("n2 did not join n1")
        env = run_env(a.mpi, {"MALLEO_NODES": "n1=0;n2=1", "MALLEO_POOL_ACTIVE": "2", "MALLEO_PROFILE_DIR": work},
                      "0.1")
        a.heat2d_mpi = a.heat2d if a.mpi == "openmpi" else a.heat2d.replace("_openmpi", "_mpich")
        la = argparse.Namespace(mpi=a.mpi, heat2d=a.heat2d_mpi)
        run = h.launch_pool(la, [("n1", n1), ("n2", n2), ("n1", n1), ("n2", n2)], grid, env)
        out = Lines(run, clock=time.time)
        try:
            app = h.registered_app(n1, a.heat2d_mpi)
            if not h.wait_for(lambda: h.active_here(n2, app) == [1], 30, 0.1):
                raise RuntimeError("world rank 1 is not active on n2")
            time.sleep(2)
            exited = {}

            def reap():
                n2.proc.wait()
                exited["wall"] = time.time()
            waiter = threading.Thread(target=reap, daemon=True)
            waiter.start()
            started = time.time()
            r = subprocess.run([h.MALLEO, "--agent", n2.local, "drain", "--json"], capture_output=True, text=True,
                               timeout=30)
            replied = time.time()
            if r.returncode != 0:
                raise RuntimeError(f"malleo drain: {r.returncode} {r.stdout} {r.stderr}")
            waiter.join(90)
            if "wall" not in exited:
                raise RuntimeError("n2's agent did not exit within 90 s")
            # Only what followed the drain: ios may have acted on the application before it (recorded).
            e1, e2 = [e for e in walled_events(n1.run_dir) if e["wall"] >= started], walled_events(n2.run_dir)
            before = [{k: e.get(k) for k in ("op", "trigger", "origin", "why", "node", "wall")}
                      for e in walled_events(n1.run_dir) if e["wall"] < started and e.get("type") == "command_queued"]
        finally:
            stop(run, 20)
        moved = first_event(e1, "reconf_result", ok=True, trigger="drain")
        left = [e for e in e2 if e.get("type") in ("drained", "drain_deadline")]
        if not moved or not left or left[-1]["type"] != "drained":
            raise RuntimeError(f"n2 did not leave drained ({moved}, {left[-1:] if left else None})")
        marks = {"malleo drain replied": None, "n2 draining": first_event(e2, "draining"),
                 "n1 command_queued": first_event(e1, "command_queued", app=app),
                 "n1 command_sent": first_event(e1, "command_sent", app=app), "n1 reconf_result": moved,
                 "n2 drained": left[-1]}
        steps = {k: (v["wall"] - started if v else None) for k, v in marks.items()}
        steps["malleo drain replied"] = replied - started
        steps["n2 malleod exited"] = exited["wall"] - started
        return {"scenario": "drain", "mpi": a.mpi, "total": exited["wall"] - started, "op": moved.get("op"),
                "load": loadavg(), "steps": steps, "queued_before": before}


def print_breakdown(records):
    order = list(records[0]["steps"])
    for k in order:
        vals = [r["steps"][k] for r in records if r["steps"].get(k) is not None]
        print(f"  {k:<24} {summary(vals)} s")


# --- cost -----------------------------------------------------------------------------------------------------------

VARIANTS = {
    # name: (agent running, application runs with the agent, extra environment)
    "agents": (True, True, {}),
    "off": (False, False, {"MALLEO_PROFILE": "off"}),
    "plain": (False, False, None),
    "agents-poll1": (True, True, {"MALLEO_POLL_INTERVAL": "1"}),
    "agents-report10": (True, True, {"MALLEO_REPORT_INTERVAL": "10"}),
    "agents-noprofile": (True, True, {"MALLEO_PROFILE": "off"}),
    "agent-idle": (True, False, {"MALLEO_PROFILE": "off"}),
}


def cpu_seconds(pid):
    """user + system CPU seconds of a live process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cost_once(a, h, name, work):
    agent_on, use_agent, extra = VARIANTS[name]
    grid = ["--rows", "2048", "--columns", "4096", "--iterations", str(a.cost_iterations), "--times"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_") or k in ("MALLEOD",)}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", MALLEO_PROFILE_DIR=work)
    cluster = h.Cluster() if agent_on else None
    try:
        agent = cluster.add("n1", {"modules": {"decision": "ios"}}) if agent_on else None
        if extra is None:
            command = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1",
                       "-n", str(a.cost_ranks), a.heat2d, *grid]
        else:
            env.update(extra)
            command = [h.MALLEO, "--agent", agent.local if use_agent else "off", "run", "--mpi", "openmpi",
                       "-n", str(a.cost_ranks), "--", a.heat2d, *grid]
        agent_cpu0 = cpu_seconds(agent.proc.pid) if agent else None
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        wall = time.perf_counter() - t0
        children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        agent_cpu = cpu_seconds(agent.proc.pid) - agent_cpu0 if agent else 0.0
        app_cpu = (children1.ru_utime + children1.ru_stime) - (children0.ru_utime + children0.ru_stime)
        if r.returncode != 0:
            raise RuntimeError(f"{name}: status {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        times = [float(s) for s in re.findall(r"^time: iteration \d+ ([0-9.]+) s on", r.stdout, re.M)]
        commands = 0
        polls = None
        if agent:
            events = walled_events(agent.run_dir)
            commands = len([e for e in events if e.get("type") in ("command_queued", "reconf_request", "action")])
            try:
                polls = agent.counters().get("commands.polls")
            except Exception:
                polls = None
        return {"variant": name, "wall": wall, "compute": sum(times), "app_cpu": app_cpu, "agent_cpu": agent_cpu, "iterations": len(times),
                "median_iteration": statistics.median(times) if times else None, "commands": commands,
                "polls": polls, "load": loadavg()}
    finally:
        if cluster:
            cluster.__exit__(None, None, None)


def cost(a, h, work, records):
    names = a.variants.split(",")
    if "off" not in names:
        raise SystemExit("--variants needs off, the baseline")
    for round_ in range(a.cost_rounds):
        order = names if round_ % 2 == 0 else names[::-1]
        got = {n: cost_once(a, h, n, work) for n in order}
        for rec in got.values():
            rec["round"] = round_
            records.append(rec)
        line = " ".join(f"{n} {got[n]['wall']:.2f}/{got[n]['compute']:.2f} s" for n in names)
        flagged = [n for n in names if got[n]["commands"]]
        print(f"cost round {round_ + 1}: wall/compute {line} load {loadavg():.2f}"
              + (f" (actions in {flagged}: left out)" if flagged else ""), flush=True)
    base = {r["round"]: r for r in records if r.get("variant") == "off"}
    print(f"cost: heat2d {a.cost_ranks} ranks, {a.cost_iterations} iterations, 2048 x 4096; ratio to off, same round")
    for n in names:
        rs = [r for r in records if r.get("variant") == n and not r["commands"]]
        print(f"  {n:<17} wall {summary([r['wall'] for r in rs])} s, compute {summary([r['compute'] for r in rs])} s, "
              f"median iteration {summary([r['median_iteration'] for r in rs], 4)} s")
        print(f"  {'':<17} CPU: application {summary([r['app_cpu'] for r in rs], 2)} s, "
              f"agent {summary([r['agent_cpu'] for r in rs], 2)} s")
        if n != "off":
            def ratio(key):
                return summary([r[key] / base[r["round"]][key] for r in rs], 4)
            both = summary([(r["app_cpu"] + r["agent_cpu"]) / base[r["round"]]["app_cpu"] for r in rs], 4)
            print(f"  {'':<17} / off: wall {ratio('wall')}, compute {ratio('compute')}, "
                  f"median iteration {ratio('median_iteration')}, application CPU {ratio('app_cpu')}, "
                  f"application + agent CPU {both}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--scenario", default="join,drain,cost")
    p.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"], help="the drain's MPI")
    p.add_argument("--variants", default="agents,off,plain")
    p.add_argument("--cost-rounds", type=int, default=9)
    p.add_argument("--cost-ranks", type=int, default=2)
    p.add_argument("--cost-iterations", type=int, default=800)
    p.add_argument("--json", help="write every round's record to this file")
    a = p.parse_args()
    build = setup_paths(a.build)
    a.heat2d = os.path.join(build, "examples", "heat2d", "heat2d_openmpi")
    if not os.path.exists(a.heat2d):
        raise SystemExit(f"{a.heat2d} not built (meson compile -C {a.build})")
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("the scenarios need two CPUs, one per node")
    import harness as h
    work = tempfile.mkdtemp(prefix="malleo-bench-loop-")
    records = []
    print(f"machine: nproc {os.cpu_count()}, load {loadavg():.2f}, commit "
          f"{subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}",
          flush=True)
    try:
        for scenario in a.scenario.split(","):
            if scenario == "cost":
                cost(a, h, work, records)
                continue
            fn = {"join": join_round, "drain": drain_round}[scenario]
            mine = []
            for round_ in range(a.rounds):
                rec = fn(a, h, work)
                rec["round"] = round_
                mine.append(rec)
                records.append(rec)
                print(f"{scenario} round {round_ + 1}: {rec['total']:.3f} s (load {rec['load']:.2f})", flush=True)
            what = {"join": "n2's malleod started -> first iteration computed on n2",
                    "drain": "`malleo drain` invoked -> n2's malleod exited"}[scenario]
            print(f"{scenario}: {what}: {summary([r['total'] for r in mine])} s")
            print_breakdown(mine)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
