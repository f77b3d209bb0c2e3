#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpus of each fuzz target into fuzz/corpus/NAME/: valid messages of every type, and every
hostile input of issue 28 (the 28-byte message whose type is a number, MessagePack and JSON nested 60,000 deep, a
wrm with an extra field nested 40,000 deep, a hello padded past the size limit, a hello whose endpoint is not UTF-8,
ids with escape sequences, implausible profiles, ipc:// endpoints). Crashers the fuzzer found are added by hand as
crash-* files and kept. Run from anywhere; files are rewritten, others left alone."""
import json
import os
import struct

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = struct.Struct(">BBBBI")
MAGIC = 0x6D
profile = {"pw": 1.0, "apw": 0.5, "upw": 0.5, "sigma": 0.0, "ctxsw": 0.0, "cores": 1, "procs": 0}


def env(type_, sender="n1", **fields):
    return {"v": 1, "type": type_, "from": sender, "id": 1, **fields}


valid = {
    "hello": env("hello", endpoint="tcp://127.0.0.1:5470", agent_version="0.1.0", group="g", profile=profile,
                 roots=["heat-1"]),
    "welcome": env("welcome", endpoint="tcp://127.0.0.1:5470", agent_version="0.1.0", profile=profile,
                   peers=[{"id": "n2", "endpoint": "tcp://127.0.0.1:5471", "age": 0.5}]),
    "gossip": env("gossip", peers=[{"id": "n2", "endpoint": "tcp://127.0.0.1:5471", "age": 0.5}]),
    "heartbeat": env("heartbeat", endpoint="tcp://127.0.0.1:5470", in_view=True, profile=profile, draining=False,
                     roots=["heat-1"], root_apps={"heat-1": {"size": 2, "iteration_seconds": 0.5, "remaining": 900,
                                                            "cost": 0.25}}),
    "wrm": env("wrm", origin="n1", origin_endpoint="tcp://127.0.0.1:5470", origin_profile=profile, wrm_id=1, ttl=3,
               hops=1, visited=["n1"], hosted={"heat-1": {"units": 2, "load": 1.5}}),
    "wrm_reply": env("wrm_reply", wrm_id=1, endpoint="tcp://127.0.0.1:5471", profile=profile, hops=2,
                     reasons={"why": "idle"}),
    "reconf_request": env("reconf_request", app="heat-1", request=1, op="split", count=2, node="n2",
                          trigger="wrm"),
    "reconf_result": env("reconf_result", app="heat-1", request=1, origin="n1", ok=True, before=2, after=4),
    "unlink": env("unlink"), "leave": env("leave"),
    "error": env("error", code="unknown_type", text="no"),
    "status": env("status", "cli"), "force": env("force", "cli", app="heat-1", op="merge", count=1),
    "register": env("register", "", app="heat-1", rank=0, pid=42, size=2, malleable=True, units=100),
    "app_report": env("app_report", "", app="heat-1", rank=0, iteration_times=[0.1, 0.2], cpu_share=0.5),
    "poll": env("poll", "", app="heat-1", iteration=3), "drain": env("drain", "cli", deadline=5.0),
    "result": env("result", "", app="heat-1", command=1, ok=True, text="done", after=4),
}
hostile = {
    "non_string_type": msgpack.packb({"v": 1, "type": 5, "from": "stranger", "id": 1}),  # 28 bytes
    "numeric_group": msgpack.packb(env("hello", endpoint="tcp://127.0.0.1:9", agent_version="1", group=7,
                                       profile=profile)),
    "not_utf8_endpoint": msgpack.packb(env("hello", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                           profile=profile)).replace(b"tcp://127.0.0.1:9", b"tcp://\xc3(1.0.0.1:9"),
    "deep_msgpack_60000": b"\x91" * 60000 + b"\xc0",
    "deep_map_msgpack": b"\x81\xa1k" * 20000 + b"\xc0",
    "deep_wrm_extra_40000": msgpack.packb(dict(valid["wrm"], extra=0))[:-1] + b"\x91" * 40000 + b"\xc0",
    "hello_padded_70000": msgpack.packb(dict(valid["hello"], pad="x" * 70000)),
    "escape_id": msgpack.packb(env("hello", "evil\x1b[2J\x1b]0;x\x07", endpoint="tcp://127.0.0.1:9",
                                   agent_version="1", profile=profile)),
    "empty_id": msgpack.packb(env("hello", "", endpoint="tcp://127.0.0.1:9", agent_version="1", profile=profile)),
    "huge_profile": msgpack.packb(env("hello", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                      profile=dict(profile, pw=1e9, cores=1e6))),
    "nan_profile": msgpack.packb(env("heartbeat", endpoint="tcp://127.0.0.1:9", profile=dict(profile, pw=float("nan")))),
    "roots_escape": msgpack.packb(dict(valid["hello"], roots=["heat\x1b[2J"])),
    "ipc_endpoint": msgpack.packb(env("hello", endpoint="ipc:///tmp/malleo-0/agent.sock", agent_version="1",
                                      profile=profile)),
    "negative_ttl": msgpack.packb(dict(valid["wrm"], ttl=-1)),
    "huge_uint": msgpack.packb(dict(valid["wrm"], wrm_id=2**64 - 1, hops=2**63)),
    "hosted_nan_load": msgpack.packb(dict(valid["wrm"], hosted={"heat-1": {"units": 1, "load": float("nan")},
                                                                 "heat\x1b[2J": {"units": -1}})),
    "root_apps_nan": msgpack.packb(dict(valid["heartbeat"], root_apps={
        "heat-1": {"size": 2, "iteration_seconds": float("nan"), "cost": float("inf")},
        "heat\x1b[2J": {"size": -1, "remaining": 2**64 - 1}})),
    "wrong_channel": msgpack.packb(env("register", "n1", app="a", rank=0, pid=1, size=1, malleable=True)),
    "truncated": msgpack.packb(valid["welcome"])[:40],
    "str32_length_lie": b"\xdb\xff\xff\xff\xff",
    "array32_length_lie": b"\xdd\xff\xff\xff\xff\xc0",
}


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


bodies = {f"valid_{k}": msgpack.packb(v) for k, v in valid.items()}
bodies.update(hostile)
for name, body in bodies.items():
    write("header", name, HEADER.pack(MAGIC, 1, 0, 0, 1) + body)
    write("envelope", name, b"\x00" + body)
for name, body in (("json_deep_30000", b"[" * 30000 + b"]" * 30000),
                   ("json_hello", json.dumps(valid["hello"]).encode()),
                   ("json_non_string_type", b'{"v":1,"type":5,"from":"stranger","id":1}')):
    write("header", name, HEADER.pack(MAGIC, 1, 1, 0, 1) + body)
    write("envelope", name, b"\x01" + body)
for name, header in (("short_header", b"\x6d\x01"), ("bad_magic", HEADER.pack(0x42, 1, 0, 0, 1)),
                     ("version_9", HEADER.pack(MAGIC, 9, 0, 0, 1)), ("empty", b"")):
    write("header", name, header + msgpack.packb(valid["heartbeat"]))

# messages: the first byte picks the type in the order of messageTypes(Peer) then messageTypes(Local).
order = ["hello", "welcome", "gossip", "heartbeat", "wrm", "wrm_reply", "reconf_request", "reconf_result", "unlink",
         "leave", "error", "status", "peers", "events", "apps", "force", "drain", "register", "app_report",
         "deregister", "poll", "result", "error"]
for i, type_ in enumerate(order):
    fields = {k: v for k, v in valid.get(type_, env(type_)).items() if k not in ("v", "type", "from", "id")}
    write("messages", f"valid_{i:02d}_{type_}", bytes([i]) + msgpack.packb(fields))
for name, body in hostile.items():
    write("messages", name, bytes([0]) + body)
write("messages", "force_bad_weights", bytes([15]) + msgpack.packb({"app": "a", "op": "split", "count": 2,
                                                                    "weights": [0, -1, 2**40]}))
write("messages", "reconf_request_escape_node", bytes([6]) + msgpack.packb(dict(
    {k: v for k, v in valid["reconf_request"].items() if k not in ("v", "type", "from", "id")}, node="n\x1b[1m")))

# config: configuration files, good and bad.
configs = {
    "default": {},
    "full": {"agent": {"id": "n1", "listen": "tcp://0.0.0.0:5470", "advertise": "tcp://n1:5470",
                       "peers": ["tcp://n2:5470"], "tick": 0.1, "max_message_bytes": 65536},
             "membership": {"max_peers": 16, "max_candidates": 8, "peer_ipc": True},
             "work_stealing": {"ttl": 5, "backoff_initial": 1, "backoff_max": 2},
             "modules": {"profiling": "static", "on_error": "fallback"}, "static": {"pw": 2.0}},
    "bad_listen": {"agent": {"listen": "tcp://127.0.0.1:5470x"}},
    "garbage_peer": {"agent": {"peers": ["garbage"]}},
    "bad_advertise": {"agent": {"advertise": "tcp://*:5470"}},
    "huge_range": {"agent": {"tick": 1e308}, "membership": {"max_peers": 1e300}},
    "bad_id": {"agent": {"id": "a\x1b[2J"}},
    "unknown_section": {"nope": {}},
    "wrong_types": {"agent": {"peers": "tcp://a:1", "tick": "fast"}, "membership": []},
}
for name, doc in configs.items():
    write("config", name, json.dumps(doc).encode())
write("config", "deep", b"[" * 30000 + b"]" * 30000)
write("config", "comments", b'// a comment\n{"agent": {/* x */ "tick": 0.5}}')
