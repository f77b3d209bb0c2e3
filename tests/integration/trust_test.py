# SPDX-License-Identifier: Apache-2.0
"""Input a hostile peer or client sends a real malleod over its real sockets, beyond what kills an agent
(hostile_test.py): fields the schema does not know are not passed on; ids outside the id character set, implausible
profiles and ipc:// endpoints from peers are refused and counted; the candidate table keeps the newest and counts
what it drops; a flood of rejections logs a few lines and a count; frames past ZeroMQ's limit and replies past a
client's queue are counted. Each time the agent keeps serving."""
import os

import msgpack
import zmq

from harness import (Cluster, check, envelope, frames, local_request, send_raw, wait_for, HEADER, MAGIC)

wire_profile = {"pw": 1.0, "apw": 0.5, "upw": 0.5, "sigma": 0.0, "ctxsw": 0.0, "cores": 1, "procs": 0}
config = {"modules": {"profiling": "static", "decision": "none"},
          "static": {"pw": 1.0, "apw": 0.2, "upw": 0.8, "cores": 1},
          "work_stealing": {"enabled": False},
          "membership": {"failure_timeout": 600, "max_candidates": 4}}
ctx = zmq.Context.instance()


def serving(agent, what):
    check(agent.alive() and agent.status()["agent"]["id"] == agent.name, f"{what}: the agent keeps serving")


def sink():
    """A fake peer's inbox: a ROUTER the agent connects to, read here."""
    s = ctx.socket(zmq.ROUTER)
    s.setsockopt(zmq.LINGER, 0)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    return s, f"tcp://127.0.0.1:{port}"


def received(s, wanted, timeout=5.0):
    """The first message the sink receives for which wanted(message) holds, or None."""
    poller = zmq.Poller()
    poller.register(s, zmq.POLLIN)
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not poller.poll(int(max(0.0, deadline - time.monotonic()) * 1000) + 1):
            continue
        _, _, body = s.recv_multipart()
        m = msgpack.unpackb(body)
        if wanted(m):
            return m
    return None


# Plain TCP (security.plain): what an inbox open to anyone survives; authenticated agents refuse these senders at the
# handshake (auth_test.py), and what an allowed node sends is checked the same way.
with Cluster(plain=True) as cluster:
    agent = cluster.add("guarded", config)

    # 1. A fake peer p joins; a wrm carrying an extra nested field is forwarded to p without it.
    p_inbox, p_endpoint = sink()
    send_raw(agent.endpoint, frames(envelope("hello", "p", endpoint=p_endpoint, agent_version="1",
                                             profile=wire_profile)))
    check(received(p_inbox, lambda m: m["type"] == "welcome") is not None, "the fake peer p is welcomed")
    wrm = envelope("wrm", "o", origin="o", origin_endpoint="tcp://127.0.0.1:9", origin_profile=wire_profile,
                   wrm_id=77, ttl=4, hops=1, visited=["o"], extra={"nested": {"deeper": [1, 2, 3]}})
    send_raw(agent.endpoint, frames(wrm))
    forwarded = received(p_inbox, lambda m: m["type"] == "wrm" and m.get("wrm_id") == 77)
    check(forwarded is not None, "the wrm is forwarded to the only peer")
    check("extra" not in forwarded and forwarded["origin"] == "o" and forwarded["ttl"] == 3,
          f"the forwarded wrm has the schema's fields only ({sorted(forwarded)})")
    check(agent.counter("fields.unknown_dropped") == 1, "the unknown field is counted as dropped")

    # 2. Ids outside the character set: an agent id, a group, an application id, a candidate's id.
    escape = "evil\x1b[2J\x1b]0;owned\x07"
    send_raw(agent.endpoint, frames(envelope("hello", escape, endpoint="tcp://127.0.0.1:9", agent_version="1",
                                             profile=wire_profile)))
    send_raw(agent.endpoint, frames(envelope("hello", "", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                             profile=wire_profile)))
    check(wait_for(lambda: agent.counter("rejected.peer.bad_envelope") == 2, 5),
          "hellos from an id with escape sequences and from an empty id are bad envelopes")
    send_raw(agent.endpoint, frames(envelope("hello", "g", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                             group="\x1b[31mred", profile=wire_profile)))
    check(wait_for(lambda: agent.counter("rejected.peer.bad_field") == 1, 5), "a group with an escape is a bad field")
    reply = local_request(agent.local, envelope("register", "test", app="app\x1b[2J", rank=0, pid=os.getpid(), size=1,
                                                malleable=True))
    check(reply["type"] == "error" and reply["code"] == "bad_field", f"an app id with an escape is refused ({reply})")
    reply = local_request(agent.local, envelope("register", "test", app="heat with space", rank=0, pid=os.getpid(),
                                                size=1, malleable=True))
    check(reply["type"] == "error" and reply["code"] == "bad_field", "an app id with a space is refused")
    peers = agent.cli("peers")
    check(peers.returncode == 0 and "\x1b" not in peers.stdout and "evil" not in peers.stdout,
          "malleo peers prints no escape sequence")
    send_raw(agent.endpoint, frames(envelope("tele\x1b[2Jport", "p")))
    check(wait_for(lambda: agent.counter("rejected.peer.unknown_type") == 1, 5), "an unknown type with an escape")
    events = agent.cli("events", "--for", "0.5")
    check(events.returncode == 0 and "evil" in events.stdout and "tele" in events.stdout,
          f"malleo events shows the rejections ({events.returncode})")
    check("\x1b" not in events.stdout and "\x07" not in events.stdout,
          "malleo events prints no escape sequence: a refused id or type is quoted as \\xHH")
    check(not any("\x1b" in line for line in open(os.path.join(agent.run_dir, "events.jsonl"), errors="replace")),
          "the event log holds no escape character")

    # 3. Implausible profiles: power of 1e9, a million cores.
    for field, value in (("pw", 1e9), ("cores", 1e6), ("procs", 1e12)):
        send_raw(agent.endpoint, frames(envelope("hello", f"big-{field}", endpoint="tcp://127.0.0.1:9",
                                                 agent_version="1", profile=dict(wire_profile, **{field: value}))))
    check(wait_for(lambda: agent.counter("rejected.peer.bad_field") == 4, 5),
          "hellos claiming pw 1e9, 1e6 cores or 1e12 processes are bad fields")
    check({x["id"] for x in agent.request("peers")["peers"]} == {"p"}, "none of them became a peer")

    # 4. ipc:// endpoints from a peer: a hello naming one, a wrm's origin, a gossiped candidate.
    ipc = f"ipc://{agent.run_dir}/agent.sock"  # the agent's own local endpoint, the worst target
    send_raw(agent.endpoint, frames(envelope("hello", "q", endpoint=ipc, agent_version="1", profile=wire_profile)))
    send_raw(agent.endpoint, frames(dict(wrm, wrm_id=78, origin_endpoint=ipc)))
    check(wait_for(lambda: agent.counter("rejected.peer.endpoint_refused") == 2, 5),
          "a hello and a wrm naming an ipc:// endpoint are refused (endpoint_refused)")
    send_raw(agent.endpoint, frames(envelope("gossip", "p", peers=[
        {"id": "c-ipc", "endpoint": ipc, "age": 0.0},
        {"id": "c\x1b[1m", "endpoint": "tcp://127.0.0.1:9", "age": 0.0},
        {"id": "c-udp", "endpoint": "udp://127.0.0.1:9", "age": 0.0}])))
    check(wait_for(lambda: agent.counter("candidates.refused") == 3, 5),
          "candidates with an ipc endpoint, an escape in the id or another transport are refused")
    check(agent.status()["peers"]["candidates"] == 0, "no candidate was taken")

    # 5. Candidates past max_candidates (4): the oldest make room, each drop counted; 10 gossiped, oldest first.
    send_raw(agent.endpoint, frames(envelope("gossip", "p", peers=[
        {"id": f"cand{i}", "endpoint": f"tcp://127.0.0.2:{1000 + i}", "age": float(100 - i)} for i in range(10)])))
    check(wait_for(lambda: agent.counter("candidates.dropped") == 6, 5), "6 candidates past the cap dropped, counted")
    check(agent.status()["peers"]["candidates"] == 4, "the table holds max_candidates")
    serving(agent, "after the refusals")

    # 6. A flood of rejected messages writes a few lines and a count, not a line each.
    log_path = os.path.join(agent.run_dir, "malleod.log")
    before = sum(1 for line in open(log_path) if "(undecodable)" in line)
    flood = ctx.socket(zmq.DEALER)
    flood.setsockopt(zmq.LINGER, 1000)
    flood.setsockopt(zmq.SNDHWM, 0)
    flood.connect(agent.endpoint)
    for _ in range(2000):
        flood.send_multipart([HEADER.pack(MAGIC, 1, 0, 0, 1), b"\xc1" * 200])
    check(wait_for(lambda: agent.counter("rejected.peer.undecodable") == 2000, 20), "all 2000 counted")
    lines = sum(1 for line in open(log_path) if "(undecodable)" in line) - before
    check(1 <= lines <= 5, f"2000 rejections logged in {lines} lines (at most 5 a kind per 10 s)")
    flood.close()

    # 7. A frame over ZeroMQ's limit (4 × max_message_bytes + 4 KiB = 266,240 bytes) ends its connection: counted.
    disconnects = agent.counter("inbox.peer.disconnects")
    big = ctx.socket(zmq.DEALER)
    big.setsockopt(zmq.LINGER, 0)
    big.connect(agent.endpoint)
    big.send_multipart([HEADER.pack(MAGIC, 1, 0, 0, 1), b"\x00" * 300000])
    check(wait_for(lambda: agent.counter("inbox.peer.disconnects") > disconnects, 10),
          "the connection ZeroMQ cut for a 300 KB frame is counted (inbox.peer.disconnects)")
    big.close()
    check(agent.counter("rejected.peer.undecodable") == 2000, "the big frame never reached the decoder")
    serving(agent, "after a frame over the limit")

    # 8. A subscriber that never reads: events past its queue are dropped and counted, the agent carries on.
    lazy = ctx.socket(zmq.DEALER)
    lazy.setsockopt(zmq.LINGER, 0)
    lazy.setsockopt(zmq.RCVHWM, 1)
    lazy.setsockopt(zmq.RCVBUF, 4096)
    lazy.connect(agent.local)
    subscribed = agent.counter("rx.local.events")
    lazy.send_multipart(frames(envelope("events", "test")))
    check(wait_for(lambda: agent.counter("rx.local.events") == subscribed + 1, 5), "the lazy subscriber subscribed")
    noisy = ctx.socket(zmq.DEALER)  # every rejection is an event sent to the subscriber
    noisy.setsockopt(zmq.LINGER, 1000)
    noisy.setsockopt(zmq.SNDHWM, 0)
    noisy.connect(agent.endpoint)
    for _ in range(20000):
        noisy.send_multipart([HEADER.pack(MAGIC, 1, 0, 0, 1), b"\xc1" * 512])
    check(wait_for(lambda: agent.counter("replies.dropped.local") >= 1, 30),
          f"events past the subscriber's queue are counted ({agent.counter('replies.dropped.local')})")
    # (the `malleo events` above, gone since, is dropped at its first event too)
    check(wait_for(lambda: agent.counter("events.subscribers_dropped") == 2, 10),
          f"the subscriber that does not read is dropped ({agent.counter('events.subscribers_dropped')} of 2)")
    noisy.close()
    lazy.close()
    serving(agent, "after a subscriber that never reads")
