# SPDX-License-Identifier: Apache-2.0
"""The agent's Prometheus endpoint (agent.metrics_listen), scraped over HTTP from real malleod processes: the peers
gauge after a second agent joins, an application registered on the local endpoint with its processes by state,
message counters that move between scrapes and equal the agent's own counters, and the text well formed. Bad
configurations: a malformed address (exit 2) and a port in use (exit 1), each one line; an agent without the option
serves nothing."""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

from harness import MALLEOD, Cluster, check, envelope, local_request, plain_config, wait_for

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as reply:
        return reply.status, reply.headers.get("Content-Type", ""), reply.read().decode()


def parse(text):
    """{(name, frozenset(labels)): value}, checking each line against the exposition format as it goes."""
    samples, typed = {}, set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            name, kind = line[7:].split(" ")
            if kind not in ("counter", "gauge") or name in typed:
                check(False, f"a TYPE line names a family once with a known type: {line}")
            typed.add(name)
            continue
        m = SAMPLE.match(line)
        if not m or m.group(1) not in typed:
            check(False, f"a sample line of a typed family: {line!r}")
        labels = frozenset(LABEL.findall(m.group(3) or ""))
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def main():
    config = {"agent": {"metrics_listen": "127.0.0.1:0"}}
    with Cluster() as cluster:
        n1 = cluster.add("n1", config)
        url = n1.info.get("metrics", "")
        check(re.fullmatch(r"http://127\.0\.0\.1:\d+/metrics", url) is not None,
              f"agent.json names the metrics URL with the port bound ({url})")
        status, content_type, text = scrape(url)
        check(status == 200 and content_type.startswith("text/plain; version=0.0.4"),
              f"GET /metrics answers 200 in Prometheus' text format ({status}, {content_type})")
        first = parse(text)
        check(value(first, "malleo_peers") == 0, "alone: malleo_peers 0")
        check(value(first, "malleo_agent_info", id="n1", endpoint=n1.endpoint,
                    app_endpoint=n1.info["app_remote"], version="0.1.0", profiling="host", protocol="p2p",
                    decision="loaddiff") == 1,
              "malleo_agent_info names the agent, its endpoints and modules")
        check(value(first, "malleo_node_cores") is not None and value(first, "malleo_node_cores") >= 1,
              "the node profile's cores are there")

        n2 = cluster.add("n2", config, seeds=[n1.endpoint])
        joined = wait_for(lambda: value(parse(scrape(url)[2]), "malleo_peers") == 1, 15, 0.2)
        check(joined, "after n2 joins, n1's malleo_peers is 1")
        samples = parse(scrape(url)[2])
        check(value(samples, "malleo_agent_joined") == 1, "malleo_agent_joined 1")
        check(value(samples, "malleo_peer_last_heard_seconds", peer="n2") is not None,
              "n2 has a last-heard gauge on n1")
        # n2 counts n1 once n1's welcome arrived, which may be after n1 counted n2.
        check(wait_for(lambda: value(parse(scrape(n2.info["metrics"])[2]), "malleo_peers") == 1, 10, 0.1),
              "n2 serves its own metrics on its own port: malleo_peers 1")

        # An application: two processes register with n1, one of them parked.
        for rank in (0, 1):
            reply = local_request(n1.local, envelope("register", "heat-rank", rank + 1, app="heat", rank=rank,
                                                     pid=os.getpid(), size=1, malleable=True, units=4))
            check(reply["type"] == "ack", f"rank {rank} registers")
        reply = local_request(n1.local, envelope("app_report", "heat-rank", 3, app="heat", rank=1, active=False))
        check(reply["type"] == "ack", "rank 1 reports itself parked")
        samples = parse(scrape(url)[2])
        check(value(samples, "malleo_applications") == 1, "malleo_applications 1")
        check(value(samples, "malleo_app_info", app="heat", root_agent="n1") == 1, "the application, rooted at n1")
        check(value(samples, "malleo_app_local_processes", app="heat", state="active") == 1 and
              value(samples, "malleo_app_local_processes", app="heat", state="parked") == 1,
              "one active and one parked process here")
        check(value(samples, "malleo_app_local_units", app="heat") == 8, "8 data units here")
        check(value(samples, "malleo_messages_received_total", channel="local", type="register") == 2,
              "two register messages counted")

        # Counters move, and say what the agent's own counters say.
        sent = value(samples, "malleo_messages_sent_total", type="heartbeat") or 0
        moved = wait_for(lambda: (value(parse(scrape(url)[2]), "malleo_messages_sent_total", type="heartbeat")
                                  or 0) > sent, 10, 0.2)
        check(moved, f"heartbeats sent rise between scrapes (from {sent})")
        counters = n1.counters()
        samples = parse(scrape(url)[2])
        hellos = value(samples, "malleo_messages_received_total", channel="peer", type="hello")
        check(hellos == counters.get("rx.hello"), f"hellos received: {hellos} == status {counters.get('rx.hello')}")

        # Every scrape wakes the agent's loop; many in a row leave it answering.
        for _ in range(50):
            scrape(url)
        check(n1.alive() and n1.status()["type"] == "status_reply", "50 scrapes in a row: n1 still answers")

        # Bad configurations: one line each, nothing left running.
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        work = tempfile.mkdtemp(prefix="malleo-metrics-")
        for listen, want_status, want in ((f"127.0.0.1:{port}", 1, "cannot serve metrics on"),
                                          ("127.0.0.1", 2, "metrics_listen"),
                                          ("127.0.0.1:70000", 2, "metrics_listen")):
            r = subprocess.run([MALLEOD, "--config", plain_config(work), "--id", "bad", "--listen", "tcp://127.0.0.1:*", "--run-dir",
                                os.path.join(work, "bad"), "--metrics-listen", listen],
                               capture_output=True, text=True, timeout=20)
            lines = [line for line in r.stderr.splitlines() if line.strip() and "security.plain" not in line]
            check(r.returncode == want_status and len(lines) == 1 and want in lines[0],
                  f"--metrics-listen {listen}: exit {r.returncode}, one line: {lines}")

        # Off by default: no URL, nothing listening.
        n3 = cluster.add("n3", {})
        check("metrics" not in n3.info, "an agent without metrics_listen names no metrics URL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
