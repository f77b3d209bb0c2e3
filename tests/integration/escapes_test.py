# SPDX-License-Identifier: Apache-2.0
"""Text a peer or an application chooses, shown inert (issue 46, item 4): a fake peer joins a real malleod (plain TCP)
with terminal escapes in every field of its own that is text (its endpoint, its version), sends an error whose code
and text hold escapes, and a fake coordinator reports a command's result whose text holds them; C0 controls, ESC, a C1
CSI (U+009B), a right-to-left override and a newline that would forge a log line. `malleo peers`, `malleo events`,
`malleo apps`, `malleo top`, `malleo timeline`, the agent's log and its event log then hold no control character
(the text is there, as \\xHH); the --json outputs are valid JSON with the text intact."""
import json
import os
import re

import zmq

from harness import Cluster, check, envelope, forced_split, frames, wait_for

wire_profile = {"pw": 1.0, "apw": 0.5, "upw": 0.5, "sigma": 0.0, "ctxsw": 0.0, "cores": 1, "procs": 0}
# At debug level the agent logs every event, the peer's text with it.
config = {"agent": {"log_level": "debug"},
          "modules": {"profiling": "static", "decision": "none"},
          "static": {"pw": 1.0, "apw": 0.2, "upw": 0.8, "cores": 1},
          "work_stealing": {"enabled": False},
          "membership": {"failure_timeout": 600}}
ESC = "\x1b[2J\x1b]0;owned\x07\u009b31m\u202e\nFAKE agent line"
# Anything a terminal may act on: C0 controls but newline and tab, DEL, C1 controls (as UTF-8), bidi overrides.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")


def inert(text, what):
    found = sorted({hex(ord(c)) for c in CONTROL.findall(text)})
    check(not found, f"{what}: no control character ({found or 'none'})")


def shown(text, what):
    """Each line of a human-readable output: no control character, and no line forged by a newline in a field."""
    inert(text, what)
    check("FAKE agent line" not in text or all(not line.startswith("FAKE") for line in text.splitlines()),
          f"{what}: a newline inside a field does not start a line of its own")


with Cluster(plain=True) as cluster:
    agent = cluster.add("shown", config)
    ctx = zmq.Context.instance()
    peer = ctx.socket(zmq.DEALER)
    peer.setsockopt(zmq.LINGER, 0)
    peer.setsockopt(zmq.IDENTITY, b"p")
    peer.connect(agent.endpoint)
    endpoint = "tcp://127.0.0.1:9" + ESC[:40]
    version = "1\x1b[31m\u009b\u202e"
    peer.send_multipart(frames(envelope("hello", "p", 1, endpoint=endpoint, agent_version=version,
                                        profile=wire_profile)))
    check(wait_for(lambda: any(p["id"] == "p" for p in agent.request("peers")["peers"]), 10),
          "a peer whose endpoint and version hold escapes joins")
    for seq in range(2, 4):
        peer.send_multipart(frames(envelope("heartbeat", "p", seq, endpoint=endpoint, profile=wire_profile)))
    peer.send_multipart(frames(envelope("error", "p", 4, code="bad\x1b[5m", text="peer error " + ESC)))
    check(wait_for(lambda: agent.counters().get("rx.error", 0) + agent.counters().get("rx.heartbeat", 0) >= 3, 10),
          "its heartbeats and its error arrive")

    # A coordinator's result with escapes in its text, as a real one would report a failure.
    forced_split(agent, "heat", ok=False, text="result " + ESC)

    peers = agent.cli("peers")
    check(peers.returncode == 0 and "127.0.0.1:9" in peers.stdout, f"malleo peers shows the peer ({peers.stderr})")
    shown(peers.stdout, "malleo peers")
    check("\\x1b[2J" in peers.stdout, "the endpoint's escape is shown as \\x1b")
    listed = agent.cli("peers", "--json")
    theirs = [p for p in json.loads(listed.stdout)["peers"] if p["id"] == "p"]
    check(theirs and theirs[0]["endpoint"] == endpoint, "malleo peers --json is valid JSON with the endpoint intact")
    inert(listed.stdout.replace("\u009b", "").replace("\u202e", ""), "malleo peers --json (but the characters JSON "
          "leaves as they are, C1 and bidi marks)")

    events = agent.cli("events", "--for", "1")
    check(events.returncode == 0 and "peer_error" in events.stdout and "command_result" in events.stdout,
          f"malleo events shows the peer's error and the result ({events.returncode} {events.stderr})")
    shown(events.stdout, "malleo events")
    # A result's text loses its control characters at the root agent (result_check.cpp) before any view shows it.
    check("peer error \\x1b[2J" in events.stdout and "result [2J" in events.stdout,
          "the error's text is shown with its escapes as \\x1b, the result's without its control characters")
    for line in agent.cli("events", "--json", "--for", "1").stdout.splitlines():
        json.loads(line)
    check(True, "malleo events --json is a JSON object per line")

    apps = agent.cli("apps")
    check(apps.returncode == 0 and "heat" in apps.stdout and "result" in apps.stdout,
          f"malleo apps shows the last result ({apps.stderr})")
    shown(apps.stdout, "malleo apps")

    top = agent.cli("top", "--duration", "1.5")
    check(top.returncode == 0 and "peer p reports an error" in top.stdout, f"malleo top shows the events ({top.stderr})")
    shown(top.stdout, "malleo top")

    log = os.path.join(agent.run_dir, "events.jsonl")
    timeline = agent.cli("timeline", log)
    check(timeline.returncode == 0 and "split" in timeline.stdout, f"malleo timeline shows the split ({timeline.stderr})")
    shown(timeline.stdout, "malleo timeline")
    with open(log, encoding="utf-8") as f:
        text = f.read()
    inert(text, "events.jsonl")
    check(all(json.loads(line) for line in text.splitlines()), "events.jsonl is JSON lines")

    with open(os.path.join(agent.run_dir, "malleod.log"), encoding="utf-8", errors="replace") as f:
        written = f.read()
    check("peer error" in written or "peer_error" in written, "the agent logged the peer's error")
    shown(written, "the agent's log")
    check(agent.alive(), "the agent keeps serving")
