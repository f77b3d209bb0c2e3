# SPDX-License-Identifier: Apache-2.0
"""`malleo top` readable (issue 44, item 6): on a virtual cluster of 3 real agents, `top` piped prints the table with
the columns named for what they count (ASK FWD YES EXP RETRY RECONF REJ) and, once, a legend saying it; its event rows
are "HH:MM:SS.mmm  NODES  words", no JSON and no number of more than 3 significant digits; the same outcome told by
several agents ("sees peer n1", said by n2 and n3) is one row naming them. `--json` keeps the raw events.

usage: top_test.py"""
import json
import re
import shutil
import sys
import tempfile

from harness import check, cluster_cli, wait_for

ROW = re.compile(r"^(\d\d:\d\d:\d\d\.\d{3})  (\S+)\s+(\S.*)$")


def main():
    cluster_dir = tempfile.mkdtemp(prefix="malleo-top-")
    try:
        r = cluster_cli(cluster_dir, "cluster", "up", "--nodes", "3")
        check(r.returncode == 0, f"cluster up --nodes 3 ({r.stderr.strip()})")

        def all_joined():
            for node in ("n1", "n2", "n3"):
                s = cluster_cli(cluster_dir, "--node", node, "peers", "--json")
                if s.returncode != 0 or len(json.loads(s.stdout)["peers"]) < 2:
                    return False
            return True
        check(wait_for(all_joined, 20), "every node sees the two others")

        r = cluster_cli(cluster_dir, "top", "--duration", "2.5", "--interval", "1")
        check(r.returncode == 0, f"top --duration 2.5 piped ({r.stderr.strip()})")
        lines = r.stdout.splitlines()
        header = next((line.split() for line in lines if line.startswith("NODE")), [])
        check(header == ["NODE", "PEERS", "PW", "APW", "UPW", "ASK", "FWD", "YES", "EXP", "RETRY", "RECONF", "REJ",
                         "STATE"], f"the columns ({header})")
        legend = [line for line in lines if line.startswith("PW power") or line.startswith("EXP TTL")]
        check(len(legend) == 2 and "ASK work requests it sent" in legend[0] and "YES answered yes" in legend[0]
              and "RECONF reconfigurations it asked for" in legend[1],
              f"a legend of two lines says what each column counts, once in a piped run ({legend})")
        rows = [ROW.match(line) for line in lines if ROW.match(line)]
        check(len(rows) >= 3, f"event rows 'HH:MM:SS.mmm  NODES  words' ({len(rows)}: {lines})")
        check(not any("{" in m.group(3) for m in rows), "no row is raw JSON")
        long_numbers = [m.group(3) for m in rows if re.search(r"\d\.\d{4,}|\d{5,}\.\d", m.group(3))]
        check(not long_numbers, f"numbers are rounded to 3 significant digits ({long_numbers})")
        seen_n1 = [m.group(2) for m in rows if m.group(3) == "sees peer n1"]
        check(seen_n1 and all(sorted(nodes.split(",")) == ["n2", "n3"] for nodes in seen_n1),
              f"'sees peer n1', said by n2 and n3, is one row naming both ({seen_n1})")

        r = cluster_cli(cluster_dir, "top", "--duration", "1.5", "--json")
        frames = [json.loads(line) for line in r.stdout.splitlines()]
        events = [e for f in frames for e in f["events"]]
        check(r.returncode == 0 and events and all("type" in e and "seq" in e for e in events),
              f"--json keeps the raw events ({len(events)})")
    finally:
        cluster_cli(cluster_dir, "cluster", "down")
        shutil.rmtree(cluster_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
