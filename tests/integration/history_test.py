# SPDX-License-Identifier: Apache-2.0
"""Junk cannot wipe the record of decisions (issue 46, item 5): a real malleod (plain TCP, the peer inbox open to
anyone) records a reconfiguration (a forced split, taken and reported by a fake coordinator), then takes a flood of
junk on its peer inbox: messages of an unknown type from an id of 64 characters, each one a rejection. Before the
fix, each rejection was a line of about 440 bytes in events.jsonl, and enough of them (twice the 64 MiB a file holds)
rotated the split out of both events.jsonl and events.1.jsonl. Now rejections are sampled (a few a kind every 10 s,
the rest counted in a `rejected_unwritten` line) and decisions have a file of their own: the split is still in the
log, `malleo timeline` still shows it, the flood is counted, and the agent answers `malleo status` throughout."""
import json
import os
import time

import zmq

from harness import Cluster, check, envelope, forced_split, frames, wait_for

config = {"modules": {"profiling": "static", "decision": "none"},
          "static": {"pw": 1.0, "apw": 0.2, "upw": 0.8, "cores": 1},
          "work_stealing": {"enabled": False}}
# Twice 64 MiB (events.jsonl and the events.1.jsonl kept) of ~440-byte lines, and a margin.
JUNK = 330_000


def logged(agent):
    events = []
    for name in ("events.jsonl", "events.1.jsonl", "decisions.jsonl"):
        path = os.path.join(agent.run_dir, name)
        if os.path.exists(path):
            with open(path) as f:
                events += [json.loads(line) for line in f if line.strip()]
    return events


with Cluster(plain=True) as cluster:
    agent = cluster.add("kept", config)
    # The decision: a split of heat, forced, taken by its coordinator and reported.
    forced_split(agent, "heat", ok=True, iteration=7, before=1, after=2, text="split done")
    check(wait_for(lambda: any(e["type"] == "command_result" for e in logged(agent)), 5),
          "the result is in the event log")

    # The flood: one connection, one message body sent again and again; the sender waits on the agent (HWM).
    ctx = zmq.Context.instance()
    junk = ctx.socket(zmq.DEALER)
    junk.setsockopt(zmq.LINGER, 0)
    junk.setsockopt(zmq.SNDHWM, 10_000)
    junk.connect(agent.endpoint)
    body = frames(envelope("\x01" * 64, "j" * 64, 1))
    started = time.monotonic()
    slowest = 0.0
    for i in range(JUNK):
        junk.send_multipart(body)
        if i % 50_000 == 0:
            asked = time.monotonic()
            check(agent.status()["agent"]["id"] == "kept", f"malleo status answers during the flood ({i} sent)")
            slowest = max(slowest, time.monotonic() - asked)
    rejected = lambda: agent.counters().get("rejected.peer.unknown_type", 0)
    check(wait_for(lambda: rejected() >= JUNK, 60), f"the agent rejected all {JUNK} junk messages ({rejected()})")
    took = time.monotonic() - started
    print(f"{JUNK} junk messages rejected in {took:.1f} s; status answered within {slowest * 1000:.0f} ms")
    size = sum(os.path.getsize(os.path.join(agent.run_dir, n)) for n in ("events.jsonl", "decisions.jsonl")
               if os.path.exists(os.path.join(agent.run_dir, n)))
    print(f"events.jsonl and decisions.jsonl hold {size} bytes")
    junk.close()

    events = logged(agent)
    check(any(e["type"] == "command_result" and e.get("app") == "heat" for e in events),
          "the split's result is still in the log")
    written = [e for e in events if e["type"] == "rejected"]
    check(len(written) < 100, f"a few rejections are written, not one a message ({len(written)})")
    timeline = agent.cli("timeline", os.path.join(agent.run_dir, "events.jsonl"))
    check(timeline.returncode == 0 and "split 1" in timeline.stdout and "1 -> 2" in timeline.stdout,
          f"malleo timeline still shows the split ({timeline.stdout} {timeline.stderr})")
    # The count of what was not written comes once its 10 s window ends (on the agent's next tick after it).
    unwritten = lambda: sum(e.get("count", 0) for e in logged(agent) if e["type"] == "rejected_unwritten")
    check(wait_for(lambda: unwritten() + len(written) >= JUNK, 15),
          f"the rejections not written are counted in the log ({unwritten()} + {len(written)} written)")
    check(agent.alive(), "the agent keeps serving")
