#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`malleo-sim --plot FILE` (the simulator's gnuplot plot): the plot's data file marks exactly the reconfigurations
the run's agents logged. Fig. 14 (splits, migrations, a merge, a drain) with ios and the static, migration-only and
swap baselines; the marks come from the simulated application (what it carried out), the event log from the root
agent (its command_result events) and the draining node's agent (draining), so the two are separate records that
must agree. Then the refusals: an image that is neither .png nor .svg, gnuplot missing from the PATH."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SIM = os.environ.get("MALLEO_SIM", "malleo-sim")
CLI = os.environ.get("MALLEO_CLI")  # the `malleo` binary: `malleo sim --plot` is the same code
SCENARIOS = os.environ.get("MALLEO_SIM_SCENARIOS", "sim/scenarios")
SCENARIO = os.path.join(SCENARIOS, "fig14_gradual.json")
COMMANDS = ("split", "merge", "migrate")

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def blocks(path):
    """The data file's blocks, in order: (comment heading it, rows as lists of fields)."""
    out = []
    heading, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                if heading is not None:
                    out.append((heading, rows))
                heading, rows = line, []
            elif line:
                rows.append(line.split())
    if heading is not None:
        out.append((heading, rows))
    return out


def main():
    if shutil.which("gnuplot") is None:
        check(False, "gnuplot is installed (apt-get install gnuplot-nox; scripts/setup.sh does)")
        return 1
    with tempfile.TemporaryDirectory() as out:
        image = os.path.join(out, "fig14.png")
        r = subprocess.run([SIM, "--scenario", SCENARIO, "--decision", "ios", "--baselines", "static,migration,swap",
                            "--seed", "2", "--out", out, "--events", "--plot", image, "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        check(r.returncode == 0, f"malleo-sim --plot exits 0 (got {r.returncode}: {r.stderr.strip()[-300:]})")
        if r.returncode != 0:
            return 1
        summary = {x["policy"]: x for x in json.loads(r.stdout)["runs"]}
        with open(image, "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", "the image is a PNG")
        check(os.path.exists(os.path.join(out, "fig14.gp")), "the gnuplot script stays next to it (fig14.gp)")
        data = blocks(os.path.join(out, "fig14.dat"))
        check(len(data) == 2 * len(summary), f"two blocks per run in fig14.dat ({len(data)} for {len(summary)} runs)")
        seen_kinds = set()
        for k, policy in enumerate(summary):
            (iter_head, iters), (mark_head, marks) = data[2 * k], data[2 * k + 1]
            check(policy in iter_head and "iterations" in iter_head and policy in mark_head,
                  f"{policy}: blocks {2 * k} and {2 * k + 1} are its iterations and reconfigurations")
            check(len(iters) == summary[policy]["iterations"],
                  f"{policy}: a row per iteration ({len(iters)}, the summary says {summary[policy]['iterations']})")
            marks = [m for m in marks if m[3] != "none"]
            seen_kinds |= {m[3] for m in marks}
            events = []
            with open(os.path.join(out, policy + ".events.jsonl")) as f:
                events = [json.loads(line) for line in f]
            logged = sorted((e["iteration"], e["op"], e["count"], e.get("from_node") or "-", e.get("node") or "-")
                            for e in events if e["type"] == "command_result" and e["ok"])
            plotted = sorted((int(m[2]), m[3], int(m[4]), m[5], m[6]) for m in marks if m[3] in COMMANDS)
            check(plotted == logged, f"{policy}: the plotted splits, merges and migrations are the command results "
                  f"the root agent logged (iteration, op, count, from, to): {len(plotted)} plotted, {len(logged)} "
                  f"logged" + ("" if plotted == logged else f"\n     plotted {plotted}\n     logged  {logged}"))
            logged = sorted((round(e["sim_time"], 6), e["agent"]) for e in events if e["type"] == "draining")
            plotted = sorted((float(m[0]), m[5]) for m in marks if m[3] == "drain")
            check(plotted == logged, f"{policy}: the plotted drains are the draining events logged ({plotted} "
                  f"against {logged})")
            counted = {kind: n for kind, n in summary[policy]["reconfigurations"].items()}
            by_kind = {}
            for m in marks:
                if m[3] != "drain":
                    by_kind[m[3]] = by_kind.get(m[3], 0) + 1
            check(by_kind == counted, f"{policy}: the marks by kind are the summary's reconfigurations "
                  f"({by_kind} against {counted})")
            for m in marks:
                # On the curve: the time of the iteration the mark falls in.
                at = float(m[0])
                before = [row for row in iters if float(row[0]) <= at + 1e-6]
                if before and float(m[1]) != float(before[-1][1]):
                    check(False, f"{policy}: mark {m} sits on its iteration's time {before[-1][1]}")
                    break
        check({"split", "merge", "migrate", "drain"} <= seen_kinds,
              f"the run marks a split, a merge, a migration and a drain (marked: {sorted(seen_kinds)})")

        r = subprocess.run([SIM, "--scenario", SCENARIO, "--decision", "ios", "--plot", os.path.join(out, "x.pdf")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        check(r.returncode == 2 and r.stderr.count("\n") == 1 and "FILE.png or FILE.svg" in r.stderr
              and not os.path.exists(os.path.join(out, "x.pdf")),
              f"--plot x.pdf: one line, status 2 (got {r.returncode}: {r.stderr.strip()})")
        if CLI:
            svg = os.path.join(out, "cli.svg")
            r = subprocess.run([CLI, "sim", "--scenario", SCENARIO, "--decision", "ios", "--baselines", "none",
                                "--plot", svg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=120)
            with open(svg) as f:
                drawn = "<svg" in f.read(2000)
            check(r.returncode == 0 and drawn and len(blocks(os.path.join(out, "cli.dat"))) == 2,
                  f"malleo sim --plot cli.svg draws an SVG from one run's two blocks (status {r.returncode})")
        empty = os.path.join(out, "no-gnuplot")
        os.mkdir(empty)
        r = subprocess.run([SIM, "--scenario", SCENARIO, "--decision", "ios", "--plot", os.path.join(out, "y.svg")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                           env={**os.environ, "PATH": empty})
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and "gnuplot-nox" in r.stderr and r.stdout == "",
              f"no gnuplot on the PATH: one line saying how to install it, status 1, before any run "
              f"(got {r.returncode}: {r.stderr.strip()})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
