# SPDX-License-Identifier: Apache-2.0
"""`malleo load`: real busy processes on a node of a virtual cluster (`malleo cluster up`, real agents with the host
profiling module). Checked from /proc: they outlive the CLI, run pinned to the node's CPUs and burn CPU time; the
node's agent sees its CPUs busy (UPW of `malleo --node n2 status`); `--stop` ends them, `--for` ends them by
themselves, `cluster down` ends a node's load; `--cpu-list` loads this machine's CPUs outside any cluster. Bad input
is one line and exit 2; `--node` with no cluster up is the usual one-line refusal.

usage: load_test.py"""
import json
import os
import shutil
import sys
import tempfile
import time

from harness import check, cluster_cli, wait_for

CLK_TCK = os.sysconf("SC_CLK_TCK")


def one_line_refusal(r, status):
    return r.returncode == status and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def stat_fields(pid):
    """/proc/<pid>/stat after the command name: [0] the state, [11] utime in clock ticks; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            line = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return line[line.rindex(")") + 2:].split()


def running(pid):
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def utime(pid):
    fields = stat_fields(pid)
    return int(fields[11]) / CLK_TCK if fields else None


def allowed_cpus(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return None


def upw(cluster_dir, node):
    r = cluster_cli(cluster_dir, "--node", node, "status", "--json")
    if r.returncode != 0:
        return None
    return json.loads(r.stdout).get("profile", {}).get("upw")


def start_load(cluster_dir, *args):
    r = cluster_cli(cluster_dir, "load", *args, "--json")
    check(r.returncode == 0, f"malleo load {' '.join(args)} starts ({r.stderr.strip()})")
    return json.loads(r.stdout)


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


def main():
    cluster_dir = tempfile.mkdtemp(prefix="malleo-load-")
    other_dir = tempfile.mkdtemp(prefix="malleo-load-none-")

    # No cluster up: --node is refused, in one line, and nothing starts.
    r = cluster_cli(other_dir, "load", "--node", "n2")
    check(one_line_refusal(r, 1) and "no virtual cluster is up" in r.stderr,
          f"load --node without a cluster: one line, exit 1 ({r.stderr.strip()})")
    check(not os.path.exists(os.path.join(other_dir, "load.json")), "and nothing was recorded")

    up = cluster_cli(cluster_dir, "cluster", "up", "--nodes", "2")
    check(up.returncode == 0, f"a virtual cluster of 2 nodes starts ({up.stderr.strip()})")
    burners = []
    try:
        with open(os.path.join(cluster_dir, "cluster.json")) as f:
            nodes = {n["name"]: n for n in json.load(f)["nodes"]}
        n2_cpus = nodes["n2"]["cpus"]

        for args, what in [(["--node", "n9"], "an unknown node"), (["--node", "n2", "--cpus", "0"], "--cpus 0"),
                           (["--node", "n2", "--for", "0"], "--for 0"), (["--node", "n2", "--for", "-2"], "--for -2"),
                           (["--node", "n2", "--cpu-list", "0"], "--node with --cpu-list"),
                           (["--cpu-list", "0-"], "a malformed --cpu-list")]:
            r = cluster_cli(cluster_dir, "load", *args)
            check(one_line_refusal(r, 2), f"load with {what}: one line, exit 2 ({r.stderr.strip()})")
        check(not os.path.exists(os.path.join(cluster_dir, "n2", "load.json")), "none of them started a load")

        # The agent has taken a sample or two of its CPU before the load.
        check(wait_for(lambda: upw(cluster_dir, "n2") is not None, 10) is not None, "n2 reports a profile")
        before = upw(cluster_dir, "n2")

        load = start_load(cluster_dir, "--node", "n2", "--for", "30")
        burners = [b["pid"] for b in load["burners"]]
        check(len(burners) == len(n2_cpus) and load["cpus"] == n2_cpus,
              f"one busy process per CPU of n2 ({load['cpus']}, pids {burners})")
        with open(os.path.join(cluster_dir, "n2", "load.json")) as f:
            recorded = json.load(f)
        check([b["pid"] for b in recorded["burners"]] == burners and abs(recorded["end"] - recorded["start"] - 30) < 1e-3,
              "n2/load.json records the pids, CPUs, start and end")
        check(all(running(p) for p in burners), "the busy processes outlive the malleo that started them")
        check(all(allowed_cpus(p) == cpu_list(n2_cpus) for p in burners),
              f"each runs pinned to n2's CPUs ({[allowed_cpus(p) for p in burners]} vs {cpu_list(n2_cpus)})")
        start = {p: utime(p) for p in burners}
        # A quarter of a second of user time each: a sleeping process would earn none, a busy one gets it within a
        # second or so even when other work shares its CPU.
        grew = wait_for(lambda: all(utime(p) - start[p] >= 0.25 for p in burners), 10, 0.1)
        check(grew, f"they burn CPU time (user time {start} -> {[utime(p) for p in burners]})")
        # The host profiling module samples every second: a CPU with a process that never sleeps is never idle.
        busy = wait_for(lambda: (upw(cluster_dir, "n2") or 0) >= 0.9 or None, 10, 0.2)
        check(busy, f"n2's agent sees its CPU busy: UPW {before} before the load, {upw(cluster_dir, 'n2')} now")

        r = cluster_cli(cluster_dir, "load", "--node", "n2")
        check(one_line_refusal(r, 1) and "--stop" in r.stderr, f"a second load on n2 is refused ({r.stderr.strip()})")

        r = cluster_cli(cluster_dir, "load", "--stop", "--node", "n2", "--json")
        check(r.returncode == 0, f"load --stop --node n2 ({r.stderr.strip()})")
        stopped = json.loads(r.stdout)["loads"]
        check(len(stopped) == 1 and all(b["result"] in ("stopped", "killed") for b in stopped[0]["burners"]),
              f"--stop says it ended n2's busy processes ({stopped})")
        check(wait_for(lambda: not any(running(p) for p in burners), 5), "they are gone")
        check(not os.path.exists(os.path.join(cluster_dir, "n2", "load.json")), "and so is n2/load.json")
        r = cluster_cli(cluster_dir, "load", "--stop", "--node", "n2")
        check(r.returncode == 0 and "no load" in r.stdout, f"a second --stop finds nothing ({r.stdout.strip()})")

        # --for: they end by themselves, on time, with nobody calling --stop.
        started = time.monotonic()
        load = start_load(cluster_dir, "--node", "n2", "--cpus", "2", "--for", "1.5")
        burners = [b["pid"] for b in load["burners"]]
        check(len(burners) == 2, "--cpus 2: two busy processes")
        check(wait_for(lambda: not any(running(p) for p in burners), 10, 0.05), "--for 1.5: they end by themselves")
        took = time.monotonic() - started
        check(1.4 <= took <= 6, f"after their time, not before ({took:.2f} s)")

        # cluster down ends a node's load too.
        load = start_load(cluster_dir, "--node", "n1")
        burners = [b["pid"] for b in load["burners"]]
        check(load["end"] is None and all(running(p) for p in burners), "load --node n1 without --for runs")
    finally:
        down = cluster_cli(cluster_dir, "cluster", "down", "--json")
    check(down.returncode == 0, f"the cluster stops ({down.stderr.strip()})")
    ended = {l["node"]: {b["result"] for b in l["burners"]} for l in json.loads(down.stdout)["loads"]}
    check(ended.get("n1") == {"stopped"}, f"cluster down ends n1's load ({ended})")
    check(wait_for(lambda: not any(running(p) for p in burners), 5), "n1's busy process is gone")

    # Outside any cluster: this machine's CPUs by number, recorded in the cluster directory; --stop alone ends it.
    cpu = os.sched_getaffinity(0).pop()
    load = start_load(other_dir, "--cpu-list", str(cpu), "--for", "20")
    burners = [b["pid"] for b in load["burners"]]
    check(load["node"] is None and allowed_cpus(burners[0]) == str(cpu), f"--cpu-list {cpu}: pinned to CPU {cpu}")
    r = cluster_cli(other_dir, "load", "--stop")
    check(r.returncode == 0 and "this machine: ended 1 busy process" in r.stdout,
          f"load --stop ends it ({r.stdout.strip()})")
    check(wait_for(lambda: not running(burners[0]), 5), "the busy process is gone")

    shutil.rmtree(cluster_dir, ignore_errors=True)
    shutil.rmtree(other_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
