#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Seed 000's Fig. 10 run for real on namespace hosts, side by side with the simulator's prediction
(docs/performance.md, "Across hosts"). Root only (network namespaces and cgroups); elsewhere one line and exit 0.

The machine has 2 cores, so a host cannot be a core: each host is a slice of --quota cores (`malleo cluster up --hosts
8 --nodes 4 --host-cpu-quota 0.25`: a cgroup v1 CPU quota its agent, its MPI daemon and every rank on it share, and
its agent measures itself against). The figure's 8 -> 12 -> 16 -> 15 -> 10 -> 8 single-core processors with 16
processes, halved: astro (examples/astro, farmer/worker, the paper's application) with 8 processes on 4 -> 6 -> 8 ->
7 -> 5 -> 4 hosts, a change every --every iterations (bench/fig10_hosts.json, the scaled scenario): hosts n5..n8 join
with `malleo cluster add`, and n2, then n3 and n4, then n5 leave with `malleo drain` (the initial hosts, as in the
figure, but never n1: rank 0's launch host). Open MPI, in one of two modes (--mode):
  spawn  (the default) MALLEO_PCM_SPAWN=wait: `malleo run --mode spawn -n 2` on n1, then forced splits (MALLEO_FORCE)
         at the first three probes put 2 ranks on each of n2, n3 and n4 (a launch over several hosts takes a
         rankfile, which Open MPI 4.1.4 applies to the job's spawns too, refusing them); the scenario's iterations
         count from there.
  pool   `malleo run -n 8 --max 24 --active-on n1,n1,n2,n2,n3,n3,n4,n4 --spares-on n1,...,n8` (2 spares on every
         host, those of the hosts still to join included: they wait parked there and register with their host's
         agent when `cluster add` starts it); a reconfiguration activates and parks processes, nothing is spawned.

astro tests --models M trial models an iteration (default 1): M times the computation on the same stars. Seed 000's
astro has a low ratio of communication to computation (sim/scenarios/fig10_dynamic.json: 5 MB of data a unit for
4 s of work, at speed 1); one model over 12 M stars has 24 MB a unit for 0.13 s, and `--stars 1000000 --models 64`
2 MB for 0.4 s (docs/notes/fig10-on-hosts.md).

Policies, as sim/README.md's runs: ios (decision ios), migration (ios with migration_only, no node weights) and
static (decision none); `ios+KEY` is ios with its boolean option KEY on (ios+origin_units), in the real run and the
simulator's alike. A host that leaves drains (its agent moves its processes off, for at most the scenario's
actions.drain_deadline); what is still on it when its agent is gone is evacuated as the simulator does: moved, by
cgroup, into the slice of the live host of the application with the fewest of its processes (those that compute:
a parked spare does not make a host the application's).

Throughput: (iterations - 1) / (arrival of rank 0's progress line of the scenario's last iteration - that of its
iteration 0, the first on 8 processes over 4 hosts): reconfigurations included, launch and set-up not. A
reconfiguration's stall: the interval of the iteration after it less the run's median interval. Each policy --rounds
times, the policies alternating within a round (the order rotated each round); median [min-max]. Every run's
checksum is compared with the others' (astro's result is bitwise the same whatever the reconfigurations).

The prediction: the same scenario in malleo-sim (build/sim/malleo-sim), seeds --seeds, the same throughput from its
per-iteration CSV. Its one free parameter, work_per_unit (seconds of one unit's iteration on a core of speed 1), is
measured first and separately: one astro process with one unit's stars (--stars / 8) alone on one slice, the median
of its iteration times times the quota.

usage: bench/fig10_hosts.py [--build build] [--mode spawn|pool] [--rounds 3] [--stars 12000000] [--models 1]
                            [--quota 0.25] [--every 6] [--policies ios,migration,static] [--seeds 1-5] [--json FILE] [--log DIR]"""
import argparse
import copy
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from hosts import Hosts, run_env  # noqa: E402
from testkit import Lines, loadavg, stop, summary  # noqa: E402

PROCESSES = 8
INITIAL = ["n1", "n2", "n3", "n4"]
JOINERS = ["n5", "n6", "n7", "n8"]
LEAVERS = ["n2", "n3", "n4", "n5", "n6", "n7"]  # the initial hosts first, as the figure's "first"; never n1
STAR_BYTES = 16
# Spawn mode starts one block of ranks on one host (a launch over several hosts takes a rankfile, which Open MPI
# 4.1.4 then applies to the job's spawns too, refusing them): 2 ranks on n1, then forced splits at the first probes
# put 2 on each of n2, n3, n4. The scenario's iterations count from the end of that set-up.
PER_HOST = PROCESSES // len(INITIAL)
SETUP = len(INITIAL) - 1
SETUP_FORCE = ",".join(f"split@{i}:{PER_HOST}/{node}" for i, node in enumerate(INITIAL[1:]))
SPARES_PER_HOST = 2  # pool mode
PROGRESS = re.compile(r"^iteration (\d+) of (\d+) on (\d+) processes")
RECONFIGURED = re.compile(r"^iteration (\d+): (\d+) processes$", re.M)
CGROUP = "/sys/fs/cgroup"


def unavailable():
    if os.geteuid() != 0:
        return "needs root (network namespaces and cgroups)"
    if not all(os.path.exists(p) for p in (f"{CGROUP}/cpu/cpu.cfs_quota_us", f"{CGROUP}/cpuacct/cpuacct.usage")):
        return "needs cgroup v1's cpu and cpuacct hierarchies under /sys/fs/cgroup"
    return None


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
    return path


def astro_pids(group):
    """The astro processes in a host's slice."""
    pids = []
    try:
        with open(f"{CGROUP}/cpu/{group}/cgroup.procs") as f:
            for line in f:
                try:
                    with open(f"/proc/{line.strip()}/comm") as c:
                        if c.read().startswith("astro"):
                            pids.append(int(line))
                except OSError:
                    pass
    except OSError:
        pass
    return pids


def computing_per_host(groups, hosts):
    """{host: astro processes that compute there}: those that used 20 ms of CPU or more in half a second. A process
    that left the computation waits parked and wakes every few milliseconds for a moment (under 1 % of a core);
    one that computes on a quarter-core slice shared with another uses 12 % (a look at the run state alone catches
    the parked ones now and then)."""
    def cpu_ticks(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, IndexError, ValueError):
            return None
    pids = {host: astro_pids(groups[host]) for host in hosts}
    before = {pid: cpu_ticks(pid) for host in hosts for pid in pids[host]}
    time.sleep(0.5)
    least = 0.02 * os.sysconf("SC_CLK_TCK")
    counts = {}
    for host in hosts:
        busy = [pid for pid in pids[host] if before[pid] is not None and (cpu_ticks(pid) or 0) - before[pid] >= least]
        counts[host] = len(busy)
    return counts


def scaled_scenario(a, work_per_unit):
    with open(os.path.join(HERE, "fig10_hosts.json")) as f:
        s = json.load(f)
    s["application"].update(work_per_unit=work_per_unit, bytes_per_unit=STAR_BYTES * a.stars // PROCESSES,
                            iterations=a.iterations)
    s["agent"]["ios"]["work_per_unit"] = work_per_unit
    for e in s["events"]:
        e["iteration"] = e["iteration"] // 6 * a.every
    s["classes"][0]["speed"] = a.quota
    return s


def agent_config(scenario, policy):
    c = copy.deepcopy(scenario["agent"])
    c["modules"] = {"decision": "none" if policy == "static" else "ios"}
    if policy == "migration":  # as malleo-sim's migration run (sim/simulation.cpp)
        c["ios"]["migration_only"] = True
        c["actions"]["node_weights"] = False
    for option in policy.split("+")[1:]:
        c["ios"][option] = True
    return c


def astro_run(a, cluster, stars, iterations, processes, force=None, pool=False):
    env = run_env()
    # Spawned processes start inside the probe that takes the command: the set-up's splits, one a probe, would
    # otherwise find the previous one still starting its processes (busy) and fail.
    env["MALLEO_PCM_SPAWN"] = "wait"
    if force:
        env["MALLEO_FORCE"] = force
    if a.log:  # the bridge's line per reconfiguration and its phase times
        env["MALLEO_PCM_VERBOSE"] = "1"
    if pool:
        active = [n for n in INITIAL for _ in range(PER_HOST)]
        spares = [n for n in INITIAL + JOINERS for _ in range(SPARES_PER_HOST)]
        launch = ["--mode", "pool", "-n", str(len(active)), "--max", str(len(active) + len(spares)),
                  "--active-on", ",".join(active), "--spares-on", ",".join(spares)]
    else:
        launch = ["--mode", "spawn", "-n", str(processes)]
    return subprocess.Popen([a.malleo, "--cluster-dir", cluster.dir, "--node", "n1", "run", "--mpi", "openmpi",
                             *launch, "--profile-dir", cluster.dir, "--", a.astro,
                             "--stars", str(stars), "--iterations", str(iterations), "--models", str(a.models),
                             "--progress", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def progress_times(lines):
    """{iteration: arrival} of rank 0's progress lines."""
    with lines.cond:
        got = list(lines.lines)
    times = {}
    for at, line in got:
        m = line and PROGRESS.match(line)
        if m:
            times[int(m.group(1))] = at
    return times


def calibrate(a, scenario_agent):
    """work_per_unit: one astro process with one unit's stars alone on one slice; seconds per iteration × quota."""
    work = tempfile.mkdtemp(prefix="malleo-fig10-cal-")
    try:
        config = write_json(os.path.join(work, "none.json"), dict(scenario_agent, modules={"decision": "none"}))
        with Hosts(a.malleo, "--hosts", "1", "--host-cpu-quota", str(a.quota), "--config", config) as cluster:
            run = astro_run(a, cluster, a.stars // PROCESSES, 10, 1)
            lines = Lines(run)
            run.wait(timeout=600)
            lines.thread.join(timeout=10)
            times = progress_times(lines)
            if run.returncode != 0 or len(times) < 10:
                sys.exit(f"calibration run failed:\n{lines.text()[-2000:]}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps = [times[i] - times[i - 1] for i in range(2, 10)]
    return statistics.median(steps) * a.quota, steps


class RealRun:
    """One policy's run on a fresh cluster: the scenario's events carried out as rank 0's lines say its iterations."""

    def __init__(self, a, scenario, policy, work):
        self.a, self.scenario, self.policy, self.work = a, scenario, policy, work
        self.drains = []
        self.notes = []  # what happened at each event
        self.evacuated = 0
        self.lock = threading.Lock()

    def placement(self):
        """Astro processes that compute, per host (computing_per_host)."""
        counts = computing_per_host(self.groups, INITIAL + JOINERS)
        return {n: c for n, c in counts.items() if c}

    def evacuate(self, node, active):
        """What the drain left on node goes into the slice of the live host of the application with the fewest of
        its processes (the simulator's evacuation). active: the active processes the drain left, as its agent said."""
        with self.lock:
            self.live.discard(node)
            # Every astro process goes (a parked one uses no CPU, wherever it waits); the count is the drain's.
            left = astro_pids(self.groups[node])
            if not left:
                return
            counts = computing_per_host(self.groups, self.live)
            used = {n: c for n, c in counts.items() if c > 0} or counts
            target = min(used, key=lambda n: (used[n], n))
            for pid in left:
                for controller in ("cpu", "cpuacct"):
                    try:
                        with open(f"{CGROUP}/{controller}/{self.groups[target]}/cgroup.procs", "w") as f:
                            f.write(str(pid))
                    except OSError:
                        pass  # ended meanwhile
            self.evacuated += active
            self.notes.append(f"{node}: its {len(left)} astro processes ({active} active) moved to {target}'s slice")

    def drain(self, cluster, node):
        deadline = self.scenario["agent"]["actions"]["drain_deadline"]
        started = time.monotonic()
        r = cluster.cli("drain", node, "--wait", str(deadline + 20), timeout=deadline + 60)
        # The agent exits once drained or at its deadline: what is still there is then on a host that is gone.
        said = r.stdout.strip() or r.stderr.strip()
        self.notes.append(f"{node} drain: {said} ({time.monotonic() - started:.1f} s)")
        left = re.search(r"with (\d+) active process", said)
        self.evacuate(node, int(left.group(1)) if left else 0)

    def run(self):
        a = self.a
        config = write_json(os.path.join(self.work, f"{self.policy}.json"), agent_config(self.scenario, self.policy))
        with Hosts(a.malleo, "--hosts", "8", "--nodes", "4", "--host-cpu-quota", str(a.quota), "--config",
                   config) as cluster:
            with open(os.path.join(cluster.dir, "hosts.json")) as f:
                self.groups = {h["node"]: h["cgroup"] for h in json.load(f)["hosts"]}
            self.live = set(INITIAL)
            load_before = loadavg()
            pool = a.mode == "pool"
            setup = 0 if pool else SETUP
            run = astro_run(a, cluster, a.stars, setup + a.iterations, PER_HOST, None if pool else SETUP_FORCE, pool)
            lines = Lines(run)
            joiners, leavers = iter(JOINERS), iter(LEAVERS)
            try:
                if lines.wait(lambda l: l.startswith(f"iteration {max(setup - 1, 0)} of "), 300) is None:
                    sys.exit(f"{self.policy}: astro did not start on 4 hosts\n{lines.text()[-2000:]}")
                self.notes.append(f"start: {self.placement()}")
                for event in self.scenario["events"]:
                    done = setup + event["iteration"]
                    if lines.wait(lambda l: l.startswith(f"iteration {done - 1} of "), 900) is None:
                        sys.exit(f"{self.policy}: no iteration {done - 1}\n{lines.text()[-3000:]}")
                    before = self.placement()
                    for _ in range(event.get("join", 0)):
                        node = next(joiners)
                        r = cluster.cli("cluster", "add", timeout=120)
                        if r.returncode != 0:
                            sys.exit(f"{self.policy}: cluster add {node}: {r.stderr.strip()}")
                        with self.lock:
                            self.live.add(node)
                    for _ in range(event.get("leave", 0)):
                        t = threading.Thread(target=self.drain, args=(cluster, next(leavers)), daemon=True)
                        t.start()
                        self.drains.append(t)
                    self.notes.append(f"after iteration {done - 1}: {event} (astro processes computing per host before: {before})")
                run.wait(timeout=1800)
                lines.thread.join(timeout=10)
            finally:
                stop(run)
            for t in self.drains:
                t.join(timeout=120)
            text = lines.text()
            if a.log:
                name = os.path.join(a.log, f"{self.policy}-{time.strftime('%H%M%S')}")
                os.makedirs(name, exist_ok=True)
                with open(f"{name}.txt", "w") as f, lines.cond:
                    f.writelines(f"{at:.3f} {line}\n" for at, line in lines.lines if line is not None)
                # Each agent's events (its decisions and their reasons), for `malleo timeline` or by hand.
                for node, info in cluster.nodes().items():
                    events = os.path.join(info["run_dir"], "events.jsonl")
                    if os.path.exists(events):
                        shutil.copy(events, os.path.join(name, f"{node}.events.jsonl"))
            times = progress_times(lines)
            n = setup + a.iterations
            if run.returncode != 0 or len(times) != n:
                sys.exit(f"{self.policy}: the run failed ({run.returncode}, {len(times)} iterations)\n{text[-3000:]}")
            setup_sizes = [int(m.group(2)) for m in RECONFIGURED.finditer(text) if int(m.group(1)) < setup]
            checksum = re.search(r"^checksum (\w+)$", text, re.M)
            sizes = [int(m.group(2)) for m in RECONFIGURED.finditer(text) if int(m.group(1)) >= setup]
            if setup_sizes != [PER_HOST * (i + 2) for i in range(setup)]:
                sys.exit(f"{self.policy}: the set-up splits were not {SETUP_FORCE} alone: {setup_sizes}\n{text[:4000]}")
            # From the line of the set-up's last iteration (pool mode: iteration 0) to the last: a.iterations - 1
            # iterations, as the simulator's iterations 1 .. a.iterations - 1.
            first = setup
            # A reconfiguration happens in the probe before its iteration: that iteration's interval against the
            # median interval of the run is what it stopped the application for.
            intervals = {k: times[k] - times[k - 1] for k in range(first + 1, n)}
            typical = statistics.median(intervals.values())
            stalls = [intervals[k] - typical for k in (int(m.group(1)) for m in RECONFIGURED.finditer(text))
                      if k in intervals]
            return {"policy": self.policy, "throughput": (n - 1 - first) / (times[n - 1] - times[first]),
                    "median_interval": typical, "reconfiguration_stalls": stalls,
                    "seconds": times[n - 1] - times[first], "checksum": checksum.group(1) if checksum else None,
                    "reconfigurations": len(sizes), "sizes": sizes, "evacuated": self.evacuated,
                    "final_processes": int(PROGRESS.match(next(l for l in reversed(text.splitlines())
                                                               if PROGRESS.match(l))).group(3)),
                    "load": [load_before, loadavg()], "notes": self.notes}


def simulate(a, scenario, work):
    """Per policy, per seed: the simulator's throughput by the real run's definition, from its per-iteration CSV."""
    path = write_json(os.path.join(work, "fig10_hosts_scaled.json"), scenario)
    first, last = (int(x) for x in a.seeds.split("-")) if "-" in a.seeds else (int(a.seeds),) * 2
    found = {"ios": [], "migration": [], "static": []}
    events = {"ios": [], "migration": [], "static": []}
    variants = [p for p in a.policies.split(",") if "+" in p]  # ios+KEY: the ios run of a scenario with KEY on
    for seed in range(first, last + 1):
        runs = [(path, "static,migration", {"ios": "ios", "migration": "migration", "static": "static"})]
        for variant in variants:
            changed = copy.deepcopy(scenario)
            for option in variant.split("+")[1:]:
                changed["agent"]["ios"][option] = True
            runs.append((write_json(os.path.join(work, f"{variant}.scenario.json"), changed), "none",
                         {variant: "ios"}))
        for scenario_path, baselines, names in runs:
            out = os.path.join(work, f"sim-{seed}")
            r = subprocess.run([a.sim, "--scenario", scenario_path, "--decision", "ios", "--baselines", baselines,
                                "--seed", str(seed), "--out", out, "--json"], capture_output=True, text=True,
                               timeout=600)
            if r.returncode != 0:
                sys.exit(f"malleo-sim: {r.stderr.strip()}")
            for policy, csv in names.items():
                with open(os.path.join(out, f"{csv}.csv")) as f:
                    rows = [line.split(",") for line in f.read().splitlines()[1:]]
                seconds = sum(float(row[2]) for row in rows[1:])
                found.setdefault(policy, []).append((len(rows) - 1) / seconds)
                events.setdefault(policy, []).append(sum(int(row[9]) for row in rows))
    return found, events, path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(os.path.dirname(HERE), "build"))
    parser.add_argument("--mode", choices=["spawn", "pool"], default="spawn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stars", type=int, default=12_000_000)
    parser.add_argument("--iterations", type=int, default=36)
    parser.add_argument("--models", type=int, default=1, help="astro's trial models an iteration (its --models)")
    parser.add_argument("--every", type=int, default=6)
    parser.add_argument("--quota", type=float, default=0.25)
    parser.add_argument("--policies", default="ios,migration,static")
    parser.add_argument("--seeds", default="1-5")
    parser.add_argument("--work-per-unit", type=float, help="skip the calibration: this work_per_unit")
    parser.add_argument("--json", help="write every round's record here")
    parser.add_argument("--log", help="write each run's output here, the bridge verbose (MALLEO_PCM_VERBOSE), "
                        "and each agent's events.jsonl")
    a = parser.parse_args()
    why = unavailable()
    if why:
        print(f"SKIP: bench/fig10_hosts.py {why}: nothing measured")
        return 0
    a.build = os.path.abspath(a.build)
    a.malleo = os.path.join(a.build, "cli", "malleo")
    a.astro = os.path.join(a.build, "examples", "astro", "astro_openmpi")
    a.sim = os.path.join(a.build, "sim", "malleo-sim")
    policies = a.policies.split(",")
    work = tempfile.mkdtemp(prefix="malleo-fig10-hosts-")
    try:
        return measure(a, policies, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(a, policies, work):
    base = scaled_scenario(a, 1.0)

    if a.work_per_unit:
        wpu, steps = a.work_per_unit, []
    else:
        wpu, steps = calibrate(a, base["agent"])
        print(f"calibration: one unit ({a.stars // PROCESSES} stars, {a.models} models) alone on a {a.quota}-core slice: "
              f"{summary(steps)} s an iteration -> work_per_unit {wpu:.4f} s at speed 1", flush=True)
    scenario = scaled_scenario(a, wpu)
    predicted, sim_reconf, path = simulate(a, scenario, work)
    for policy in policies:
        print(f"malleo-sim {policy}: {summary(predicted[policy])} iterations/s, reconfigurations "
              f"{summary(sim_reconf[policy], 0)} (seeds {a.seeds})", flush=True)

    records = []
    for r in range(a.rounds):
        order = policies[r % len(policies):] + policies[:r % len(policies)]
        for policy in order:
            record = RealRun(a, scenario, policy, work).run()
            record["round"] = r + 1
            records.append(record)
            print(f"round {r + 1} {policy}: {record['throughput']:.4f} iterations/s ({record['seconds']:.1f} s), "
                  f"{record['reconfigurations']} reconfigurations {record['sizes']}, {record['evacuated']} evacuated, "
                  f"final {record['final_processes']} processes, checksum {record['checksum']}, load "
                  f"{record['load'][0]:.1f}-{record['load'][1]:.1f}", flush=True)
            if record["reconfiguration_stalls"]:
                print(f"    reconfigurations stopped it for {summary(record['reconfiguration_stalls'], 2)} s each "
                      f"(an iteration: {record['median_interval']:.2f} s)", flush=True)
            for note in record["notes"]:
                print(f"    {note}", flush=True)
    print()
    print(f"| policy | real: iterations/s | real: reconfigurations | malleo-sim: iterations/s | malleo-sim: "
          f"reconfigurations |")
    print("| --- | --- | --- | --- | --- |")
    for policy in policies:
        mine = [x for x in records if x["policy"] == policy]
        print(f"| {policy} | {summary([x['throughput'] for x in mine], 4)} | "
              f"{summary([x['reconfigurations'] for x in mine], 0)} | {summary(predicted[policy], 4)} | "
              f"{summary(sim_reconf[policy], 0)} |")
    checksums = {x["checksum"] for x in records}
    print(f"checksums: {sorted(checksums)} ({'all equal' if len(checksums) == 1 else 'DIFFER'})")
    if a.json:
        write_json(a.json, {"work_per_unit": wpu, "calibration": steps, "scenario": scenario,
                            "predicted": predicted, "sim_reconfigurations": sim_reconf, "rounds": records})
    return 0 if len(checksums) <= 1 else 1


if __name__ == "__main__":
    sys.exit(main())
