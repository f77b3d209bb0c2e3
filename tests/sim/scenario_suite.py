#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The scenario regression suite (issue 27): every scenario of sim/scenarios/ (churn_10000 aside: minutes a seed)
with ios against the baselines its assertions need (migration only, static), asserting on the medians over the seeds.

  fig10_dynamic   ios at least 15 % faster in total than migration only, and faster than static
  fig14_gradual   ios faster than static; after the last event, at most one reconfiguration per hold-down period
  heterogeneous   the same
  churn_1000      ios's mean iteration no worse than static's; every joiner's work request answered

The registered test (meson suite sim_scenarios) runs seeds 1-3 and, per scenario, only the baselines its assertions
compare with: about 1.5 minutes on two cores. `--sweep` runs every policy on every scenario over seeds 1-10 (the
table sim/README.md and docs/performance.md show; bench/sim_scenarios.sh). MALLEO_SIM_SEEDS (e.g. "1-10") and
MALLEO_SIM_ONLY (comma-separated scenario names) choose the seeds and scenarios of either. Every (scenario, seed)
is its own malleo-sim process, the longest first, one per CPU."""
import csv
import json
import os
import statistics
import concurrent.futures
import subprocess
import sys
import tempfile

SIM = os.environ.get("MALLEO_SIM", "malleo-sim")
SCENARIOS = os.environ.get("MALLEO_SIM_SCENARIOS", "sim/scenarios")
POLICIES = ["ios", "migration", "static"]
SWEEP = "--sweep" in sys.argv[1:]
# The baselines each scenario's assertions compare ios with (the sweep runs them all), and the scenarios' relative
# cost (one seed's wall time with all baselines, in seconds) to start the longest first.
NEEDED = {"fig10_dynamic": ["static", "migration"], "fig14_gradual": ["static"], "heterogeneous": ["static"],
          "churn_1000": ["static"]}
COST = {"heterogeneous": 48, "churn_1000": 34, "fig10_dynamic": 8, "fig14_gradual": 1}

# The targets.
MIN_FIG10_GAIN = 0.15
CHURN_SLACK = 0.0

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def seeds():
    text = os.environ.get("MALLEO_SIM_SEEDS", "1-10" if SWEEP else "1-3")
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def baselines(scenario):
    return [p for p in POLICIES if p != "ios" and (SWEEP or p in NEEDED.get(scenario, POLICIES))]


def run(scenario, seed, out):
    path = os.path.join(SCENARIOS, scenario + ".json")
    r = subprocess.run([SIM, "--scenario", path, "--decision", "ios", "--baselines", ",".join(baselines(scenario)),
                        "--seed", str(seed), "--json", "--out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"{scenario} seed {seed}: malleo-sim exit {r.returncode}: {r.stderr.strip()}")
    runs = {x["policy"]: x for x in json.loads(r.stdout)["runs"]}
    for policy, x in runs.items():
        with open(os.path.join(out, policy + ".csv")) as f:
            x["rows"] = list(csv.DictReader(f))
    return runs


def quiet_from(doc, rows):
    """When the environment stops changing: after the last event (timed, or at an iteration) and the last step
    of any class's load trace."""
    t = 0.0
    for e in doc.get("events", []):
        if "at" in e:
            t = max(t, e["at"] + e.get("every", 0) * (e.get("repeat", 1) - 1))
        elif "iteration" in e:
            it = e["iteration"]
            if it < len(rows):
                t = max(t, float(rows[it]["start"]))
    for c in doc.get("classes", []):
        for step in c.get("trace", []):
            t = max(t, step["at"])
    return t


def most_per_hold_down(rows, since, hold_down):
    """The most reconfigurations carried out within any hold-down period after `since`."""
    times = []
    for r in rows:
        if float(r["start"]) >= since:
            times += [float(r["start"])] * int(r["reconfigurations"])
    return max((sum(1 for u in times if t <= u < t + hold_down) for t in times), default=0)


def spread(values):
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def main():
    only = [s for s in os.environ.get("MALLEO_SIM_ONLY", "").split(",") if s]
    scenarios = only or ["fig10_dynamic", "fig14_gradual", "heterogeneous", "churn_1000"]
    jobs = sorted(((scenario, seed) for scenario in scenarios for seed in seeds()),
                  key=lambda job: -COST.get(job[0], 10))

    def run_job(job):
        with tempfile.TemporaryDirectory() as out:
            return job, run(job[0], job[1], out)
    # Every (scenario, seed) is an independent simulation: one process per CPU, the longest first so that the
    # last ones to finish are short.
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        done = dict(pool.map(run_job, jobs))
    table = []
    for scenario in scenarios:
        with open(os.path.join(SCENARIOS, scenario + ".json")) as f:
            doc = json.load(f)
        hold_down = doc.get("agent", {}).get("actions", {}).get("hold_down", 10.0)
        policies = ["ios"] + baselines(scenario)
        total = {p: [] for p in policies}
        mean = {p: [] for p in policies}
        reconf = {p: [] for p in policies}
        bursts, unanswered = [], []
        for seed in seeds():
            runs = done[(scenario, seed)]
            for p in policies:
                x = runs[p]
                total[p].append(x["app_seconds"] if x["app_seconds"] is not None else float("nan"))
                mean[p].append(x["mean_iteration_seconds"])
                reconf[p].append(sum(v for k, v in x["reconfigurations"].items() if k != "evacuate"))
            ios = runs["ios"]
            bursts.append(most_per_hold_down(ios["rows"], quiet_from(doc, ios["rows"]), hold_down))
            unanswered.append(ios["late_joins"] - ios["join_replies"])
        for p in policies:
            finished = [v for v in total[p] if v == v]
            table.append((scenario, p, spread(finished) if len(finished) == len(total[p]) else "unfinished",
                          spread(mean[p]), spread(reconf[p])))
        med = {p: statistics.median(mean[p]) for p in policies}
        if scenario == "churn_1000":
            check(med["ios"] <= med["static"] * (1 + CHURN_SLACK),
                  f"churn_1000: ios mean iteration {med['ios']:.3f} s no worse than static "
                  f"{med['static']:.3f} s")
            check(max(unanswered) == 0, f"churn_1000: every joiner's request answered (unanswered per seed: "
                  f"{unanswered})")
            continue
        t = {p: statistics.median(total[p]) for p in policies}
        check(t["ios"] < t["static"], f"{scenario}: ios {t['ios']:.1f} s faster than static {t['static']:.1f} s")
        if scenario == "fig10_dynamic":
            gain = 1 - t["ios"] / t["migration"]
            check(gain >= MIN_FIG10_GAIN, f"fig10_dynamic: ios {gain:.1%} faster than migration only "
                  f"({t['ios']:.1f} s against {t['migration']:.1f} s; at least {MIN_FIG10_GAIN:.0%})")
        else:
            check(max(bursts) <= 1, f"{scenario}: after the environment settles, at most one reconfiguration "
                  f"per {hold_down:g} s hold-down (per seed: {bursts})")
    print()
    print("| scenario | policy | total s, median [min-max] | mean iteration s | reconfigurations |")
    print("| --- | --- | ---: | ---: | ---: |")
    for row in table:
        print("| " + " | ".join(row) + " |")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
