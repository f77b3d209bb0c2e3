# SPDX-License-Identifier: Apache-2.0
"""`malleo cluster add`: a node joins a virtual cluster that runs (real agents). Added to a 1-node cluster it is n2,
on the next CPU round-robin (or --cpus), with the configuration `cluster up` gave n1 (its --decision and --config
keys) and n1 as its seed: its agent joins n1 and n1 sees it; `cluster status` lists it, `--node n2` reaches it,
`cluster down` stops it. A later one is n3 even after n2 left. Bad input and no cluster: one line, exit 2 and 1.
Its text output ends with the next commands one a line, each pasted into a shell as it stands a command that succeeds
and leaves the new node running (they were once one `a | b | malleo drain n4` line: a pipeline that drained it).

usage: cluster_add_test.py"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import MALLEO, check, cluster_cli, wait_for


def one_line_refusal(r, status):
    return r.returncode == status and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def peer_ids(cluster_dir, node):
    r = cluster_cli(cluster_dir, "--node", node, "peers", "--json")
    return [p["id"] for p in json.loads(r.stdout)["peers"]] if r.returncode == 0 else []


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def allowed_cpus(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(line.split(":", 1)[1].strip() for line in f if line.startswith("Cpus_allowed_list:"))


def main():
    cluster_dir = tempfile.mkdtemp(prefix="malleo-add-")
    work = tempfile.mkdtemp(prefix="malleo-add-work-")
    try:
        r = cluster_cli(cluster_dir, "cluster", "add")
        check(one_line_refusal(r, 1) and "no cluster is up" in r.stderr,
              f"no cluster up: one line, status 1 ({r.returncode}: {r.stderr.strip()})")

        base = os.path.join(work, "base.json")
        with open(base, "w") as f:
            json.dump({"agent": {"profile_interval": 0.25}}, f)
        r = cluster_cli(cluster_dir, "cluster", "up", "--nodes", "1", "--config", base, "--decision", "ios", "--json")
        check(r.returncode == 0, f"cluster up --nodes 1 ({r.stderr.strip()})")
        n1 = json.loads(r.stdout)["nodes"][0]

        for bad in ("x", "1-0", "100000"):
            r = cluster_cli(cluster_dir, "cluster", "add", "--cpus", bad)
            check(one_line_refusal(r, 2) and "--cpus" in r.stderr,
                  f"--cpus {bad}: one line, status 2 ({r.returncode}: {r.stderr.strip()})")
        check(len(json.loads(cluster_cli(cluster_dir, "cluster", "status", "--json").stdout)["nodes"]) == 1,
              "a refused add leaves the cluster as it was")

        r = cluster_cli(cluster_dir, "cluster", "add", "--json")
        check(r.returncode == 0, f"cluster add ({r.stderr.strip()})")
        n2 = json.loads(r.stdout)
        usable = sorted(os.sched_getaffinity(0))
        check(n2["name"] == "n2" and n2["seed"] == "n1" and n2["cpus"] == [usable[1 % len(usable)]],
              f"the new node is n2, seeded with n1, on the next CPU round-robin ({n2})")
        check(running(n2["pid"]) and allowed_cpus(n2["pid"]) == str(n2["cpus"][0]),
              f"its agent runs, bound to that CPU ({allowed_cpus(n2['pid'])})")
        with open(os.path.join(n2["run_dir"], "config.json")) as f:
            config = json.load(f)
        check(config["modules"] == {"decision": "ios"} and config["agent"]["profile_interval"] == 0.25 and
              config["agent"]["id"] == "n2" and config["agent"]["peers"] == ["n1@" + n1["endpoint"]] and
              config["agent"]["run_dir"] == n2["run_dir"],
              f"its configuration: the cluster's (--config and --decision of `up`), n1 as its peer ({config})")

        check(wait_for(lambda: "n1" in peer_ids(cluster_dir, "n2"), 10), "n2's agent joins n1")
        check(wait_for(lambda: "n2" in peer_ids(cluster_dir, "n1"), 10), "n1 knows n2")
        status = json.loads(cluster_cli(cluster_dir, "cluster", "status", "--json").stdout)
        check([(n["name"], n["running"]) for n in status["nodes"]] == [("n1", True), ("n2", True)],
              f"cluster status lists n2, running ({status['nodes']})")

        # n2 leaves; the next node is n3 all the same, on the CPUs asked for.
        r = cluster_cli(cluster_dir, "--node", "n2", "drain", "--wait", "20")
        check(r.returncode == 0 and wait_for(lambda: not running(n2["pid"]), 10),
              f"n2 drains and its agent exits ({r.stdout.strip()} {r.stderr.strip()})")
        cpus = f"{usable[0]}" if len(usable) == 1 else f"{usable[0]},{usable[1]}"
        r = cluster_cli(cluster_dir, "cluster", "add", "--cpus", cpus, "--json")
        check(r.returncode == 0, f"cluster add --cpus {cpus} ({r.stderr.strip()})")
        n3 = json.loads(r.stdout)
        check(n3["name"] == "n3" and ",".join(map(str, n3["cpus"])) == cpus and allowed_cpus(n3["pid"]) in
              (cpus, cpus.replace(",", "-")), f"a node added after n2 left is n3, on --cpus {cpus} ({n3})")
        check(wait_for(lambda: "n1" in peer_ids(cluster_dir, "n3"), 10), "n3 joins n1")

        r = cluster_cli(cluster_dir, "cluster", "add")
        check(r.returncode == 0 and "n4 joined" in r.stdout, f"cluster add, text ({r.stdout} {r.stderr.strip()})")
        n4 = json.loads(cluster_cli(cluster_dir, "cluster", "status", "--json").stdout)["nodes"][-1]
        lines = r.stdout.splitlines()
        nexts = lines[lines.index("next:") + 1:] if "next:" in lines else []
        check(len(nexts) >= 2 and all(n.startswith("  malleo --cluster-dir ") and "|" not in n and ";" not in n and
                                      "drain" not in n for n in nexts),
              f"the next commands one a line, with the cluster's --cluster-dir, none draining ({nexts})")
        env = dict(os.environ, PATH=os.path.dirname(MALLEO) + os.pathsep + os.environ["PATH"])
        for line in nexts:
            pasted = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=30, env=env)
            check(pasted.returncode == 0 and "n4" in pasted.stdout and running(n4["pid"]),
                  f"pasted, `{line.strip()}` succeeds, n4 still runs ({pasted.returncode}: {pasted.stderr.strip()})")

        r = cluster_cli(cluster_dir, "cluster", "down", "--json")
        down = json.loads(r.stdout) if r.returncode == 0 else {}
        check({n["name"]: n["result"] for n in down.get("nodes", [])} ==
              {"n1": "stopped", "n2": "not_running", "n3": "stopped", "n4": "stopped"},
              f"cluster down stops the added nodes too ({r.stdout.strip()} {r.stderr.strip()})")
        check(not running(n3["pid"]), "n3's agent is gone")
    finally:
        cluster_cli(cluster_dir, "cluster", "down")
        shutil.rmtree(cluster_dir, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
