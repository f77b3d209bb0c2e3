#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmarks across hosts (docs/performance.md, "Across hosts"): each node a network namespace of its own made by
`malleo cluster up --hosts`, traffic between nodes over the cluster's veth links and bridge; real malleod, real
mpirun, real heat2d (Open MPI). Every measure is repeated --rounds times, its variants side by side within each round
(the order reversed every other round); median [min–max] reported. Root only (namespaces).

  wrm     The WRM one-hop round trip of bench/agent_bench.cpp, to a loaded agent (static profile, UPW 0.95, decision
          loaddiff) on host n2: from host n1 (`ip netns exec <n1> agent_bench --agent <n2's endpoint> --bind
          tcp://<n1's address>:*`), and from n2's own namespace (the same agent over its own address, no link between)
          in the same round. Per round the median of --requests round trips, and the rate with 256 in flight.
  join    Spawn mode. heat2d (--rows 1024 --columns 4096) runs on n1 (host n1, CPU 0); after 3 s, `malleo cluster
          add` starts n2's agent on host n2 (made at `cluster up --nodes 1 --hosts 2`, its static profile idle: the
          measure is of the mechanism, not of the CPU on a shared machine). Measured from invoking `cluster add` to
          the arrival of rank 0's `--times` line of the first iteration on more than 1 process: that iteration used
          the ghost column a process spawned on host n2 sent over the link (ios sizes the split; n_max 5).
  reconf  Pool mode, at each of --sizes-mb (heat2d's grid, 1024 rows, in MiB; it holds a second grid as large):
          split  1 -> 2 processes, the new one on n2 (`malleo run -n 1 --max 2 --spares-on n2`, MALLEO_FORCE=split@K:1):
                 half of the grid crosses the link;
          merge  2 -> 1, world rank 1 on n2 (`-n 2 --active-on n1,n2 --max 2`, MALLEO_FORCE=merge@K:1): its half comes
                 back;
          the operation's time from the bridge's own timer (MALLEO_PCM_PHASES, `total`: the coordinator from the
          probe to the new world), against stop-restart without a checkpoint: a fresh `malleo run` at the new size
          (split: 2 processes on n1 and n2; merge: 1 on n1), timed from its start to the arrival of rank 0's line of
          iteration K, the iteration the operation happened at (launch, MPI_Init, allocation and first touch, K
          iterations). Ratio: stop-restart / operation, per round.

usage: bench/hosts.py [--build build] [--rounds 5] [--measure wrm,join,reconf] [--sizes-mb 100,300] [--json FILE]"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
from testkit import Lines, first_event, loadavg, stop, summary, walled_events  # noqa: E402

COLUMN_BYTES = 8 * 1024  # a column of --rows 1024 doubles
AT = 5  # the iteration of a forced operation


class Hosts:
    """A `malleo cluster up` with hosts, in a directory of its own, always taken down."""

    def __init__(self, malleo, *args):
        self.malleo = malleo
        self.dir = tempfile.mkdtemp(prefix="malleo-bench-hosts-")
        self.args = args

    def cli(self, *args, timeout=60):
        return subprocess.run([self.malleo, "--cluster-dir", self.dir, *args], capture_output=True, text=True,
                              timeout=timeout)

    def __enter__(self):
        # A SIGTERM (a harness's limit, a kill) unwinds as an exit would, so the hosts are taken down below.
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        r = self.cli("cluster", "up", *self.args)
        if r.returncode != 0:
            self.__exit__()
            sys.exit(f"malleo cluster up {' '.join(self.args)}: {r.stderr.strip()}")
        return self

    def __exit__(self, *exc):
        self.cli("cluster", "down")
        shutil.rmtree(self.dir, ignore_errors=True)

    def nodes(self):
        with open(os.path.join(self.dir, "cluster.json")) as f:
            return {n["name"]: n for n in json.load(f)["nodes"]}


def run_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLEO_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", MALLEO_POLL_INTERVAL="0.1")
    return env


def iteration_line(k, processes=None):
    """A match for rank 0's --times line of iteration k (None: any), on `processes` processes ("more": 2 or more)."""
    def match(line):
        if not line.startswith(f"time: iteration {'' if k is None else k}"):
            return False
        if k is not None and not line.startswith(f"time: iteration {k} "):
            return False
        if processes == "more":
            return not line.endswith(" on 1 processes")
        return processes is None or line.endswith(f" on {processes} processes")
    return match


def measure_wrm(a, build, rounds):
    bench = os.path.join(build, "bench", "agent_bench")
    loaded = {"modules": {"profiling": "static", "decision": "loaddiff"}, "static": {"apw": 0.05, "upw": 0.95},
              "work_stealing": {"enabled": False}}
    quiet = {"work_stealing": {"enabled": False}, "modules": {"decision": "none"}}
    # agent_bench speaks to n2 as a peer of its own making, with no key: plain TCP (CURVE's cost is not measured).
    for config in (loaded, quiet):
        config["security"] = {"plain": True}
    records = []
    work = tempfile.mkdtemp(prefix="malleo-bench-wrm-")
    try:
        configs = {}
        for name, value in (("n1", quiet), ("n2", loaded)):
            configs[name] = os.path.join(work, f"{name}.json")
            with open(configs[name], "w") as f:
                json.dump(value, f)
        with Hosts(a.malleo, "--hosts", "2", "--node-config", f"n1={configs['n1']}",
                   "--node-config", f"n2={configs['n2']}") as cluster:
            nodes = cluster.nodes()
            target = nodes["n2"]["endpoint"]
            for r in range(rounds):
                record = {"load": loadavg()}
                order = ["across", "same-host"] if r % 2 == 0 else ["same-host", "across"]
                for variant in order:
                    origin = nodes["n1" if variant == "across" else "n2"]
                    p = subprocess.run(["ip", "netns", "exec", origin["host"], bench, "--agent", target, "--bind",
                                        f"tcp://{origin['address']}:*", "--rounds", "1", "--requests",
                                        str(a.requests), "--json"], capture_output=True, text=True, timeout=300)
                    if p.returncode != 0:
                        sys.exit(f"agent_bench from {origin['host']}: {p.stderr.strip()}")
                    record[variant] = json.loads(p.stdout)
                records.append(record)
                print(f"wrm round {r + 1}: across {record['across']['wrm_rtt_median_us']:.1f} µs, same host "
                      f"{record['same-host']['wrm_rtt_median_us']:.1f} µs (load {record['load']:.1f})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for variant in ("across", "same-host"):
        print(f"WRM one-hop round trip, {variant}: median "
              f"{summary([x[variant]['wrm_rtt_median_us'] for x in records], 1)} µs, p99 "
              f"{summary([x[variant]['wrm_rtt_p99_us'] for x in records], 1)} µs, rate "
              f"{summary([x[variant]['wrm_rate_per_s'] for x in records], 0)} / s")
    return records


def measure_join(a, build, rounds):
    heat2d = os.path.join(build, "examples", "heat2d", "heat2d_openmpi")
    grid = ["--rows", "1024", "--columns", "4096", "--iterations", "100000"]
    base = {"agent": {"decision_interval": 0.5, "profile_interval": 0.5},
            "work_stealing": {"idle_threshold": 0.9, "backoff_max": 2.0}, "modules": {"decision": "ios"},
            "ios": {"evacuate_load": 0, "n_max": 5}, "actions": {"hold_down": 4}}
    idle = dict(base, modules={"profiling": "static", "decision": "ios"},
                static={"pw": 1.0, "apw": 1.0, "upw": 0.0, "cores": 1})
    records = []
    for r in range(rounds):
        work = tempfile.mkdtemp(prefix="malleo-bench-join-")
        try:
            config = os.path.join(work, "base.json")
            n1 = os.path.join(work, "n1.json")
            n2 = os.path.join(work, "n2.json")
            for path, value in ((config, base), (n1, {"host": {"cpus": [0]}}), (n2, idle)):
                with open(path, "w") as f:
                    json.dump(value, f)
            with Hosts(a.malleo, "--nodes", "1", "--hosts", "2", "--config", config, "--node-config",
                       f"n1={n1}") as cluster:
                run = subprocess.Popen([a.malleo, "--cluster-dir", cluster.dir, "--node", "n1", "run", "--mpi",
                                        "openmpi", "--mode", "spawn", "-n", "1", "--profile-dir", work, "--", heat2d,
                                        *grid, "--times"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, env=run_env())
                lines = Lines(run)
                try:
                    if lines.wait(iteration_line(None, 1), 60) is None:
                        sys.exit(f"join: heat2d did not start\n{lines.text()[-2000:]}")
                    time.sleep(3)  # its rate on n1 alone, as an operator's cluster would have run a while
                    added, added_wall = time.monotonic(), time.time()
                    add = cluster.cli("cluster", "add", "--config", n2, "--cpus", "1")
                    if add.returncode != 0:
                        sys.exit(f"join: cluster add: {add.stderr.strip()}")
                    first = lines.wait(iteration_line(None, "more"), 60)
                    if first is None:
                        sys.exit(f"join: no iteration on more than 1 process within 60 s (events: {cluster.dir})")
                    record = {"seconds": first - added, "load": loadavg()}
                    nodes = cluster.nodes()
                    n1_events = walled_events(nodes["n1"]["run_dir"])
                    n2_events = walled_events(nodes["n2"]["run_dir"])
                    for name, e in (("n2 started", first_event(n2_events, "started")),
                                    ("n2 wrm_sent", first_event(n2_events, "wrm_sent")),
                                    ("n1 command_queued", first_event(n1_events, "command_queued")),
                                    ("n1 reconf_result", first_event(n1_events, "reconf_result", ok=True))):
                        record[name] = None if e is None else e["wall"] - added_wall
                    records.append(record)
                    steps = ", ".join(f"{k} {v:.3f}" for k, v in record.items() if k not in ("seconds", "load")
                                      and v is not None)
                    print(f"join round {r + 1}: {record['seconds']:.3f} s ({steps}; load {record['load']:.1f})",
                          flush=True)
                finally:
                    stop(run)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"cluster add n2 -> first iteration computed on host n2: {summary([x['seconds'] for x in records])} s")
    for step in ("n2 started", "n2 wrm_sent", "n1 command_queued", "n1 reconf_result"):
        print(f"  {step}: {summary([x[step] for x in records if x.get(step) is not None])} s")
    return records


def timed_run(a, cluster, heat2d, megabytes, placement, env_extra, work):
    """(seconds from the start to rank 0's line of iteration AT, output) of one `malleo run` on the cluster."""
    columns = megabytes * (1 << 20) // COLUMN_BYTES
    env = run_env()
    env.update(env_extra)
    started = time.monotonic()
    run = subprocess.Popen([a.malleo, "--cluster-dir", cluster.dir, "--node", "n1", "run", "--mpi", "openmpi",
                            *placement, "--profile-dir", work, "--", heat2d, "--rows", "1024", "--columns",
                            str(columns), "--iterations", str(AT + 3), "--times"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = Lines(run)
    at = lines.wait(iteration_line(AT), 600)
    run.wait(timeout=600)
    lines.thread.join(timeout=10)
    if run.returncode != 0 or at is None:
        sys.exit(f"run {placement} at {megabytes} MiB failed ({run.returncode})\n{lines.text()[-3000:]}")
    return at - started, lines.text()


def operation(a, cluster, heat2d, megabytes, op, work):
    phases = os.path.join(work, "phases.json")
    if os.path.exists(phases):
        os.remove(phases)
    placement = ["-n", "1", "--max", "2", "--spares-on", "n2"] if op == "split" else \
        ["-n", "2", "--active-on", "n1,n2", "--max", "2"]
    timed_run(a, cluster, heat2d, megabytes, placement,
              {"MALLEO_FORCE": f"{op}@{AT}:1", "MALLEO_PCM_PHASES": phases}, work)
    with open(phases) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if [r["operation"] for r in records] != [op]:
        sys.exit(f"{op} at {megabytes} MiB: phase records {records}")
    return records[0]


def restart(a, cluster, heat2d, megabytes, op, work):
    placement = ["-n", "2", "--active-on", "n1,n2"] if op == "split" else ["-n", "1"]
    seconds, _ = timed_run(a, cluster, heat2d, megabytes, placement, {}, work)
    return seconds


def measure_reconf(a, build, rounds):
    heat2d = os.path.join(build, "examples", "heat2d", "heat2d_openmpi")
    quiet = {"modules": {"decision": "none"}, "work_stealing": {"enabled": False}}
    records = []
    work = tempfile.mkdtemp(prefix="malleo-bench-reconf-")
    try:
        config = os.path.join(work, "quiet.json")
        with open(config, "w") as f:
            json.dump(quiet, f)
        with Hosts(a.malleo, "--hosts", "2", "--config", config) as cluster:
            for r in range(rounds):
                for megabytes in a.sizes_mb:
                    for op in ("split", "merge"):
                        record = {"round": r + 1, "megabytes": megabytes, "op": op, "load": loadavg()}
                        first_operation = r % 2 == 0
                        if first_operation:
                            record["phases"] = operation(a, cluster, heat2d, megabytes, op, work)
                        record["restart"] = restart(a, cluster, heat2d, megabytes, op, work)
                        if not first_operation:
                            record["phases"] = operation(a, cluster, heat2d, megabytes, op, work)
                        record["operation"] = record["phases"]["total"]
                        record["ratio"] = record["restart"] / record["operation"]
                        records.append(record)
                        print(f"reconf round {r + 1}, {megabytes} MiB {op}: {record['operation']:.4f} s "
                              f"(redistribution {record['phases']['redistribution']:.4f}), stop-restart "
                              f"{record['restart']:.3f} s: {record['ratio']:.1f}x (load {record['load']:.1f})",
                              flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for megabytes in a.sizes_mb:
        for op in ("split", "merge"):
            these = [x for x in records if x["megabytes"] == megabytes and x["op"] == op]
            print(f"{megabytes} MiB {op} across hosts: operation {summary([x['operation'] for x in these], 4)} s, "
                  f"stop-restart {summary([x['restart'] for x in these])} s, ratio "
                  f"{summary([x['ratio'] for x in these], 1)}")
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--measure", default="wrm,join,reconf")
    parser.add_argument("--requests", type=int, default=2000, help="wrm: round trips per round")
    parser.add_argument("--sizes-mb", default="100,300", help="reconf: heat2d's grid sizes, MiB")
    parser.add_argument("--json", help="keep every record in this file")
    a = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("ip"):
        sys.exit("bench/hosts.py makes network namespaces: run it as root, with iproute2")
    build = os.path.abspath(a.build)
    a.malleo = os.path.join(build, "cli", "malleo")
    a.sizes_mb = [int(x) for x in a.sizes_mb.split(",")]
    print(f"load {loadavg():.1f}, {os.cpu_count()} CPUs, {subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}")
    results = {}
    for measure in a.measure.split(","):
        results[measure] = {"wrm": measure_wrm, "join": measure_join, "reconf": measure_reconf}[measure](
            a, build, a.rounds)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
