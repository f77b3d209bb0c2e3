# SPDX-License-Identifier: Apache-2.0
"""The three inputs that killed an agent at 00bbe3f, sent to a real malleod over its real sockets: a field of the
wrong type in a message the schema refuses, MessagePack and JSON nested tens of thousands deep (on the peer inbox,
the local endpoint and the remote application endpoint), and 1,100 hellos from distinct ids naming distinct
endpoints. Each time the agent must refuse, count, and keep serving with bounded tables and descriptors."""
import os

import msgpack
import zmq

from harness import (Cluster, check, envelope, frames, local_request, send_raw,
                     static_profile, wait_for, HEADER, MAGIC)

profile = static_profile(0.5)
# A node profile as peers send it (every field the schema requires).
wire_profile = {"pw": 1.0, "apw": 0.5, "upw": 0.5, "sigma": 0.0, "ctxsw": 0.0, "cores": 1, "procs": 0}


def alive_and_serving(agent, what):
    check(agent.alive(), f"{what}: the agent is still running")
    check(agent.status()["agent"]["id"] == agent.name, f"{what}: the agent still answers status")


def deep_msgpack(depth):
    return [HEADER.pack(MAGIC, 1, 0, 0, 1), b"\x91" * depth + b"\xc0"]


def deep_json(depth):
    return [HEADER.pack(MAGIC, 1, 1, 0, 1), b"[" * depth + b"]" * depth]


def counter(agent, name):
    # Polled while the agent works through a burst (1,100 hellos, each opening a socket, take several seconds in the
    # sanitizer build): a status request waits behind the burst, so it gets longer than the harness's 2 s.
    return agent.request("status", timeout=15)["counters"].get(name, 0)


# Each reproduction gets an agent of its own, so that each one alone is seen to end an agent that lacks its guard.
config = {"modules": {"profiling": "static"}, "static": profile,
          "membership": {"failure_timeout": 600}}  # peers leave only by eviction here
# Plain TCP (security.plain): what an inbox open to anyone survives; authenticated agents refuse these senders at the
# handshake (auth_test.py), and what an allowed node sends is checked the same way.
with Cluster(plain=True) as cluster:
    agent = cluster.add("typed", config)
    remote = agent.info["app_remote"]

    # 1. A 28-byte message whose type is a number: the schema refuses it, and refusing it must not throw.
    wrong_type = [HEADER.pack(MAGIC, 1, 0, 0, 1), msgpack.packb({"v": 1, "type": 5, "from": "stranger", "id": 1})]
    send_raw(agent.endpoint, wrong_type)
    check(wait_for(lambda: counter(agent, "rejected.peer.bad_envelope") == 1, timeout=5),
          "peer inbox: a non-string type is counted as a bad envelope")
    alive_and_serving(agent, "non-string type")
    for name, endpoint in (("local", agent.local), ("remote", remote)):
        reply = local_request(endpoint, None, raw=wrong_type)
        check(reply["type"] == "error" and reply["code"] == "bad_envelope",
              f"{name} endpoint: a non-string type gets error bad_envelope ({reply.get('code')})")
    # A hello whose type is right but whose group is a number: refused by the schema, not by an exception.
    send_raw(agent.endpoint, frames(envelope("hello", "stranger", endpoint="tcp://127.0.0.1:9",
                                             agent_version="1", group=7, profile=wire_profile)))
    check(wait_for(lambda: counter(agent, "rejected.peer.bad_field") == 1, timeout=5),
          "peer inbox: a hello with a numeric group is a bad field")
    # A well-formed hello whose endpoint is not UTF-8 (0xc3 then a byte that cannot continue it, same length): the
    # agent at 00bbe3f took it and died writing its peer_up event to the log (json type_error 316).
    bad_text = msgpack.packb(envelope("hello", "stranger", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                      profile=wire_profile)).replace(b"tcp://127.0.0.1:9", b"tcp://\xc3(1.0.0.1:9")
    check(msgpack.unpackb(bad_text, raw=True)[b"endpoint"] == b"tcp://\xc3(1.0.0.1:9",
          "the hello is valid MessagePack: only its text can be refused")
    send_raw(agent.endpoint, [HEADER.pack(MAGIC, 1, 0, 0, 1), bad_text])
    check(wait_for(lambda: counter(agent, "rejected.peer.undecodable") == 1, timeout=5),
          "peer inbox: a hello whose endpoint is not UTF-8 is undecodable")
    check(counter(agent, "rejected.peer.handler_error") == 0, "no handler threw")
    alive_and_serving(agent, "numeric group")

    # 2. Nesting: 60,000 levels of MessagePack arrays (under 64 KiB) and of JSON, on every endpoint.
    agent = cluster.add("nested", config)
    remote = agent.info["app_remote"]
    deep = deep_msgpack(60000)  # 60,002 bytes: under the 64 KiB limit, so only its depth can refuse it
    send_raw(agent.endpoint, deep)
    send_raw(agent.endpoint, deep_json(30000))
    check(wait_for(lambda: counter(agent, "rejected.peer.too_deep") == 2, timeout=5),
          "peer inbox: MessagePack and JSON nested 60,000 and 30,000 deep are refused as too deep")
    alive_and_serving(agent, "deep nesting on the peer inbox")
    for name, endpoint in (("local", agent.local), ("remote", remote)):
        for kind, parts in (("MessagePack", deep), ("JSON", deep_json(30000))):
            reply = local_request(endpoint, None, raw=parts)
            check(reply["type"] == "error" and reply["code"] == "too_deep",
                  f"{name} endpoint: {kind} nested deep gets error too_deep ({reply.get('code')})")
    alive_and_serving(agent, "deep nesting on the local and remote endpoints")

    # A valid wrm carrying an extra field nested 40,000 deep is refused whole, so no hop forwards it.
    wrm = envelope("wrm", "stranger", origin="stranger", origin_endpoint="tcp://127.0.0.1:9",
                   origin_profile=wire_profile, wrm_id=1, ttl=3, hops=0, visited=["stranger"])
    # Built by hand: msgpack-python refuses to pack such depth. The last value (0, one byte) is replaced.
    body = msgpack.packb(dict(wrm, extra=0))[:-1] + b"\x91" * 40000 + b"\xc0"
    send_raw(agent.endpoint, [HEADER.pack(MAGIC, 1, 0, 0, 1), body])
    check(wait_for(lambda: counter(agent, "rejected.peer.too_deep") == 3, timeout=5),
          "a wrm with an extra field nested 40,000 deep is refused as too deep")
    # The same wrm with a shallow extra field still passes: unknown fields are ignored, not refused.
    shallow = msgpack.packb(dict(wrm, extra=[[[1]]]))
    rx_before = counter(agent, "rx.wrm")
    send_raw(agent.endpoint, [HEADER.pack(MAGIC, 1, 0, 0, 1), shallow])
    check(wait_for(lambda: counter(agent, "rx.wrm") == rx_before + 1, timeout=5),
          "a wrm with a shallow extra field is taken")
    alive_and_serving(agent, "nested wrm")

    # 3. 1,100 hellos from distinct ids, each naming its own endpoint (distinct loopback addresses, one sink
    # listening on all of them): the agent keeps at most max_peers peers and a bounded number of sockets.
    agent = cluster.add("crowded", config)
    sink = zmq.Context.instance().socket(zmq.ROUTER)
    sink.setsockopt(zmq.LINGER, 0)
    port = sink.bind_to_random_port("tcp://0.0.0.0")
    fds_before = len(os.listdir(f"/proc/{agent.proc.pid}/fd"))
    count = 1100
    attacker = zmq.Context.instance().socket(zmq.DEALER)  # one connection is enough to claim 1,100 ids
    attacker.setsockopt(zmq.LINGER, 0)
    attacker.setsockopt(zmq.SNDHWM, 0)
    attacker.connect(agent.endpoint)
    for i in range(count):
        ep = f"tcp://127.0.{1 + i // 250}.{1 + i % 250}:{port}"
        attacker.send_multipart(frames(envelope("hello", f"fake{i}", endpoint=ep, agent_version="1",
                                                profile=wire_profile)))
    check(wait_for(lambda: counter(agent, "rx.hello") == count, timeout=60),
          f"all {count} hellos reached the agent")
    alive_and_serving(agent, f"{count} hellos")
    alive = agent.request("peers")["peers"]
    check(len(alive) <= 256, f"the peer table is capped at max_peers (256): {len(alive)} peers")
    evicted = counter(agent, "peers.dropped.evicted")
    check(counter(agent, "peers.joined") == count and evicted == count - len(alive),
          f"every peer past the cap evicted an older one and was counted ({evicted})")
    fds = len(os.listdir(f"/proc/{agent.proc.pid}/fd"))
    check(fds - fds_before < 2 * 512 + 64,
          f"descriptors stay bounded by the outgoing-socket cap: {fds_before} before, {fds} after")
    check(f"fake{count - 1}" in {p["id"] for p in alive}, "the newest caller is kept (the oldest are evicted)")
    sink.close()
    attacker.close()

    # Still a working agent: a real peer joins it afterwards.
    cluster.add("real", config, seeds=[agent.endpoint])
    check(wait_for(lambda: any(p["id"] == "real" for p in agent.request("peers")["peers"]), timeout=10),
          "a real agent joins the attacked one afterwards")
    alive_and_serving(agent, "after a real join")
