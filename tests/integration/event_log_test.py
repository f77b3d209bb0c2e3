# SPDX-License-Identifier: Apache-2.0
"""`malleo timeline` and `malleo plot` on agents' event logs: the hand-written logs of two agents in events/
(n1 hosts heat2d-7's rank 0 and is n2's seed; n2 joins, records the same split as n1, drains and leaves; n1's log has
two malformed lines, a forced split that failed and a second application with fewer progress reports) merged on one
wall-clock axis. The timeline's rows, iterations and throughputs are the ones the logs imply: the seed's side of the
join is not a join, a drain is one row and its end another, the failed command says what went wrong, not who asked.
A third log, n3's of a day before (its cluster went down, its log stayed), is left out unless --all-sessions. The plot
is a real PNG (gnuplot) or an SVG whose labels name the reconfigurations. Bad input is one line.

usage: event_log_test.py"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from harness import MALLEO, check

HERE = os.path.dirname(os.path.abspath(__file__))
N1 = os.path.join(HERE, "events", "n1.jsonl")
N2 = os.path.join(HERE, "events", "n2.jsonl")
N3_YESTERDAY = os.path.join(HERE, "events", "n3-yesterday.jsonl")


def malleo(*args, env=None):
    return subprocess.run([MALLEO, *args], capture_output=True, text=True, timeout=60, env=env)


def one_line_refusal(r, status):
    return r.returncode == status and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def timeline_rows(*args):
    r = malleo("timeline", *args, "--json")
    check(r.returncode == 0, f"timeline {' '.join(os.path.basename(a) for a in args)} --json ({r.stderr.strip()})")
    return json.loads(r.stdout), r.stderr


def summary(rows):
    return [(row["event"], round(row["time"], 3), row["iteration"],
             None if row["throughput"] is None else round(row["throughput"], 2)) for row in rows]


def main():
    work = tempfile.mkdtemp(prefix="malleo-event-log-")
    if shutil.which("gnuplot") is None:
        check(False, "gnuplot is installed (apt-get install gnuplot-nox; scripts/setup.sh does)")

    # The two agents' logs on one axis: time 0 is n1's log_started, n2's starts 3.5 s later.
    out, err = timeline_rows(N1, N2)
    check(out["app"] == "heat2d-7" and out["start"] == 1795700000.0, f"heat2d-7, from {out['start']}")
    expected = [("node n2 joined", 3.7, 80, 40.0),
                ("split 1 -> n2", 5.2, 130, 40.0),
                ("migrate 1 n2 -> n1 failed", 8.1, 240, 55.56),
                ("merge 1", 9.5, 300, 55.56),
                ("split 2 failed", 10.2, 340, 40.0),
                ("n2 drains", 10.5, 340, 40.0),
                ("n2 drained", 10.8, 340, 40.0),
                ("n2 leaves", 11.0, 380, 40.0)]
    check(summary(out["rows"]) == expected,
          f"rows in time order with their iteration and throughput ({summary(out['rows'])})")
    split, migrate, merge, failed = out["rows"][1], out["rows"][2], out["rows"][3], out["rows"][4]
    check(split["ok"] and split["why"] == "n2 idle: apw 0.95 against n1's 0.10" and split["decision"] == "ios"
          and split["trigger"] == "wrm" and (split["before"], split["after"]) == (2, 3),
          "the split carries why, the decision, the trigger and 2 -> 3 processes")
    check(not migrate["ok"] and migrate["type"] == "reconf_result", "the refused migration is there, not ok")
    check(merge["type"] == "command_result" and merge["why"] == "merge at iteration 300: 3 -> 2 processes",
          "a forced merge (command_result) without why shows its text")
    check(not failed["ok"] and failed["why"] == "split of 2 refused: no spare process (wanted: asked by a person "
          "(malleo force))", f"a failed forced split says what went wrong first ({failed['why']})")
    check(migrate["why"] == "refused: busy & <hot> (wanted: n2 loaded: upw 1.00 > 0.9 & it's <hot>)",
          f"so does a refused migration ({migrate['why']})")
    check(out["rows"][5]["why"] == "1 active process to move" and out["rows"][6]["why"] == "took 0.3 s",
          "the drain's row says what it has to move, its end how long it took")
    warnings = err.strip().splitlines()
    check(len(warnings) == 2 and "skipped 2 malformed lines" in warnings[0] and "n1.jsonl:7" in warnings[0]
          and "showing heat2d-7" in warnings[1] and "astro-3" in warnings[1],
          f"one warning counts the malformed lines, one line says which application is shown ({warnings})")
    check(out["skipped"] == {"malformed": 2, "unanchored": 0}, "--json counts them too")

    r = malleo("timeline", N1, N2)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and lines[0].startswith("heat2d-7: 4 reconfigurations, 7 progress reports")
          and lines[1].split() == ["TIME", "ITERATION", "IT/S", "PROCESSES", "EVENT", "WHY"],
          f"the table's title and header ({lines[:2]})")
    check(lines[3].split()[:6] == ["5.20", "130", "40.00", "2", "->", "3"] and "split 1 -> n2" in lines[3]
          and lines[3].endswith("n2 idle: apw 0.95 against n1's 0.10"), f"the split's row ({lines[3]})")

    same, _ = timeline_rows(N1, N1, N2)
    check(summary(same["rows"]) == expected, "a log given twice counts once")
    astro, err = timeline_rows(N1, N2, "--app", "astro-3")
    check([r["event"] for r in astro["rows"]] == ["node n2 joined", "n2 drains", "n2 drained", "n2 leaves"]
          and "showing" not in err, "--app astro-3: no reconfiguration of its own, the nodes' changes")

    # An agent's restart appends a new log_started: the lines after it are on its clock; lines before any are
    # skipped (no wall clock).
    restarted = os.path.join(work, "restarted.jsonl")
    with open(restarted, "w") as f:
        for line in [
                {"type": "app_progress", "app": "a", "size": 1, "iterations": 5, "seconds": 0.5, "t": 0.5, "seq": 1,
                 "agent": "n9"},
                {"type": "log_started", "wall": 1000.0, "t": 0.0, "seq": 0, "agent": "n9"},
                {"type": "app_progress", "app": "a", "size": 1, "iterations": 5, "seconds": 0.5, "t": 1.0, "seq": 1,
                 "agent": "n9"},
                {"type": "log_started", "wall": 1100.0, "t": 0.0, "seq": 0, "agent": "n9"},
                {"type": "reconf_result", "app": "a", "op": "split", "count": 1, "ok": True, "before": 1,
                 "after": 2, "iteration": 7, "why": "later", "t": 2.0, "seq": 1, "agent": "n9"}]:
            f.write(json.dumps(line) + "\n")
    out, err = timeline_rows(restarted, "--all-sessions")
    check(summary(out["rows"]) == [("split 1", 102.0, 7, 2.0)], f"a restart's clock ({summary(out['rows'])})")
    check(out["skipped"]["unanchored"] == 1 and "1 event before its file's log_started line" in err,
          f"the line before any log_started is skipped and said ({err.strip()})")

    out, err = timeline_rows(restarted)
    check(summary(out["rows"]) == [("split 1", 2.0, 7, None)] and "1 earlier session left out" in err,
          f"100 s later, the restart is another session: alone by default ({summary(out['rows'])}, {err.strip()})")

    # Yesterday's n3, whose log stayed: left out, and said in one line; --all-sessions shows it, time 0 its start.
    out, err = timeline_rows(N1, N2, N3_YESTERDAY)
    check(summary(out["rows"]) == expected and out["start"] == 1795700000.0,
          f"yesterday's session is left out by default ({summary(out['rows'])})")
    check(err.strip().splitlines()[-1].startswith("malleo: showing the latest session of the files, from ")
          and err.strip().endswith("1 earlier session left out: --all-sessions shows it"),
          f"and one line says so ({err.strip().splitlines()[-1]})")
    out, err = timeline_rows(N1, N2, N3_YESTERDAY, "--all-sessions")
    check([row["event"] for row in out["rows"]][:2] == ["split 1 -> n4", "n3 leaves"]
          and out["start"] == 1795613600.0 and "left out" not in err,
          f"--all-sessions shows it, time 0 its start ({[row['event'] for row in out['rows']][:2]})")
    r = malleo("plot", N1, N2, N3_YESTERDAY, "-o", os.path.join(work, "today.svg"), "--json")
    check(r.returncode == 0 and len(json.loads(r.stdout)["reconfigurations"]) == 4 and "left out" in r.stderr,
          f"plot: the latest session too ({r.stderr.strip()})")

    for args, status, what in [(["timeline", os.path.join(work, "none.jsonl")], 2, "an unreadable file"),
                               (["timeline", N2, "--app", "nope"], 2, "an --app the files do not name"),
                               (["timeline", os.devnull], 1, "a file with no event"),
                               (["plot", N1, "-o", os.path.join(work, "x.pdf")], 2, "an image that is not png or svg"),
                               (["plot", N2, "-o", os.path.join(work, "x.png")], 1, "logs without app_progress")]:
        r = malleo(*args)
        check(one_line_refusal(r, status), f"{args[0]} with {what}: one line, exit {status} ({r.stderr.strip()})")
    check(not os.path.exists(os.path.join(work, "x.pdf")) and not os.path.exists(os.path.join(work, "x.png")),
          "and no image")

    png = os.path.join(work, "throughput.png")
    r = malleo("plot", N1, N2, "-o", png)
    check(r.returncode == 0 and r.stdout.startswith(f"wrote {png}: heat2d-7, 7 progress reports")
          and "4 reconfigurations (2 failed or refused), 4 node events" in r.stdout, f"plot -o PNG ({r.stdout.strip()} {r.stderr})")
    with open(png, "rb") as f:
        head = f.read(24)
    width, height = struct.unpack(">II", head[16:24])
    check(head[:8] == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 10000 and (width, height) == (1200, 600),
          f"a real PNG, 1200x600 ({os.path.getsize(png)} bytes, {width}x{height})")

    svg = os.path.join(work, "throughput.svg")
    r = malleo("plot", N1, N2, "-o", svg, "--json")
    check(r.returncode == 0, f"plot -o SVG --json ({r.stderr.strip()})")
    marks = json.loads(r.stdout)["reconfigurations"]
    check([(m["event"], m["ok"]) for m in marks] == [("split 1 -> n2", True), ("migrate 1 n2 -> n1 failed", False),
                                                      ("merge 1", True), ("split 2 failed", False)],
          f"--json lists the marks ({marks})")
    nodes = json.loads(r.stdout)["nodes"]
    check([(m["event"], round(m["time"], 3)) for m in nodes] == [("node n2 joined", 3.7), ("n2 drains", 10.5),
                                                                 ("n2 drained", 10.8), ("n2 leaves", 11.0)],
          f"--json lists the nodes' joins, drains and leaves the plot marks too ({nodes})")
    root = ET.parse(svg).getroot()
    text = " ".join("".join(e.itertext()) for e in root.iter() if e.tag.endswith("text"))
    for label in ["split 1 -> n2: n2 idle: apw 0.95 against n1's 0.10",
                  "migrate 1 n2 -> n1 failed: refused: busy & <hot> (wanted: n2 loaded: upw 1.00...",
                  "merge 1: merge at iteration 300: 3 -> 2 processes", "iterations per second", "heat2d-7",
                  "node n2 joined: via n1", "n2 drains: 1 active process to move", "node joined, drained or left"]:
        check(label in text, f"the SVG parses as XML and says '{label}'")

    r = malleo("plot", N1, N2, "-o", os.path.join(work, "nogp.png"), env=dict(os.environ, PATH=work))
    check(one_line_refusal(r, 1) and "apt-get install gnuplot-nox" in r.stderr,
          f"without gnuplot: one line naming the package ({r.stderr.strip()})")

    # An agent's events.jsonl that started again (junk or a long run filled it) no longer holds the split; the
    # decisions.jsonl beside it does, with a split of an earlier run of the agent, before a restart. The timeline of
    # events.jsonl shows this run's split, not the earlier run's, and the progress after it.
    agent_dir = os.path.join(work, "n9")
    os.mkdir(agent_dir)
    wall = 1_790_000_000.0

    def lines(*events):
        return "".join(json.dumps(e) + "\n" for e in events)
    result = {"type": "command_result", "agent": "n9", "app": "heat", "op": "split", "count": 1, "command": 2,
              "ok": True, "iteration": 40, "before": 2, "after": 3, "why": "asked by a person (malleo force)"}
    with open(os.path.join(agent_dir, "events.jsonl"), "w") as f:
        f.write(lines({"type": "log_started", "agent": "n9", "seq": 0, "t": 500.0, "wall": wall + 500.0},
                      {"type": "app_progress", "agent": "n9", "seq": 900, "t": 501.0, "app": "heat", "size": 3,
                       "iteration": 90, "iterations": 10, "seconds": 0.1}))
    with open(os.path.join(agent_dir, "decisions.jsonl"), "w") as f:
        f.write(lines({"type": "log_started", "agent": "n9", "seq": 0, "t": 0.0, "wall": wall - 3600.0},
                      dict(result, seq=7, t=10.0, command=1, before=1, after=2),
                      {"type": "log_started", "agent": "n9", "seq": 0, "t": 0.0, "wall": wall},
                      dict(result, seq=7, t=20.0)))
    out, err = timeline_rows(os.path.join(agent_dir, "events.jsonl"))
    check([(row["event"], row["time"], row["before"], row["after"]) for row in out["rows"]] ==
          [("split 1", 20.0, 2, 3)] and err == "",
          f"the timeline of events.jsonl shows this run's split from decisions.jsonl, not the earlier run's "
          f"({out['rows']}, {err.strip()})")
    check(out["progress_reports"] == 1, "and the progress report after it")

    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
