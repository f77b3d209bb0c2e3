# SPDX-License-Identifier: Apache-2.0
"""Raw malformed, truncated, oversized, wrong-version and unknown-type messages
sent to the peer port, to the local endpoint and to the remote application
endpoint are rejected and counted while the agent keeps serving; the remote
endpoint refuses whatever is not a poll or a result."""
import msgpack

from harness import (Cluster, check, envelope, frames, local_request, send_raw,
                     static_profile, wait_for, HEADER, MAGIC)

profile = static_profile(0.5)
good = envelope("heartbeat", "intruder", endpoint="tcp://127.0.0.1:1", profile=profile)
packed = msgpack.packb(good)

cases = {  # name: (frames, counter reason)
    "garbage body": ([HEADER.pack(MAGIC, 1, 0, 0, 1), b"\xc1\xc1\xc1\xc1"], "undecodable"),
    "truncated body": ([HEADER.pack(MAGIC, 1, 0, 0, 1), packed[: len(packed) // 2]], "undecodable"),
    "short header": ([b"\x6d\x01", packed], "bad_header"),
    "bad magic": ([HEADER.pack(0x42, 1, 0, 0, 1), packed], "bad_header"),
    "one frame": ([packed], "bad_header"),
    "oversized": ([HEADER.pack(MAGIC, 1, 0, 0, 1), msgpack.packb(dict(good, pad="x" * 70000))],
                  "oversized"),
    "envelope version 9": ([HEADER.pack(MAGIC, 9, 0, 0, 1), packed], "newer_version"),
    "schema version 2": (frames(dict(good, v=2)), "newer_version"),
    "unknown type": (frames(envelope("teleport", "intruder")), "unknown_type"),
    "missing field": (frames(envelope("heartbeat", "intruder")), "bad_field"),
    "not an object": ([HEADER.pack(MAGIC, 1, 0, 0, 1), msgpack.packb([1, 2, 3])], "bad_envelope"),
    "json garbage": ([HEADER.pack(MAGIC, 1, 1, 0, 1), b"{not json"], "undecodable"),
}

# Plain TCP (security.plain): what an inbox open to anyone survives; authenticated agents refuse these senders at the
# handshake (auth_test.py), and what an allowed node sends is checked the same way.
with Cluster(plain=True) as cluster:
    agent = cluster.add("m0", {"modules": {"profiling": "static"}, "static": profile})
    expected = {}
    for name, (parts, reason) in cases.items():
        send_raw(agent.endpoint, parts)
        expected[reason] = expected.get(reason, 0) + 1

    def peer_counts():
        c = agent.counters()
        got = {r: c.get(f"rejected.peer.{r}", 0) for r in expected}
        return got if got == expected else None

    got = wait_for(peer_counts, timeout=5)
    check(got is not None, f"peer port: every bad message counted by reason {expected}, got "
          f"{ {r: agent.counters().get(f'rejected.peer.{r}', 0) for r in expected} }")
    check(not agent.status()["peers"]["alive"], "no intruder became a peer")

    # The local endpoint answers every bad request with an error and keeps serving.
    local_expected = {}
    for name, (parts, reason) in cases.items():
        # A peer message type does not belong on the local endpoint.
        reason = "wrong_channel" if name == "missing field" else reason
        reply = local_request(agent.local, None, raw=parts)
        check(reply["type"] == "error" and reply["code"] == reason,
              f"local endpoint, {name}: error '{reply.get('code')}'")
        local_expected[reason] = local_expected.get(reason, 0) + 1
    c = agent.counters()
    got = {r: c.get(f"rejected.local.{r}", 0) for r in local_expected}
    check(got == local_expected, f"local endpoint: counted {got}")

    # The remote application endpoint (coordinators on other nodes): the same bad frames, answered and counted the
    # same way, and every well-formed request but poll and result refused as local_only.
    remote = agent.info["app_remote"]
    check(remote.startswith("tcp://127.0.0.1:") and agent.status()["agent"]["app_endpoint"] == remote,
          f"agent.json and status name the remote endpoint ({remote})")
    remote_expected = {}
    for name, (parts, reason) in cases.items():
        # A peer's message is not for this endpoint either.
        reason = "local_only" if name == "missing field" else reason
        reply = local_request(remote, None, raw=parts)
        check(reply["type"] == "error" and reply["code"] == reason, f"remote endpoint, {name}: error '{reply.get('code')}'")
        remote_expected[reason] = remote_expected.get(reason, 0) + 1
    for type_, fields in (("force", dict(app="x", op="split", count=1)),
                          ("register", dict(app="x", rank=0, pid=1, size=1, malleable=True)),
                          ("status", {}), ("apps", {})):
        reply = local_request(remote, envelope(type_, "intruder", **fields))
        check(reply["type"] == "error" and reply["code"] == "local_only",
              f"remote endpoint, {type_} request: error '{reply.get('code')}'")
        remote_expected["local_only"] += 1
    reply = local_request(remote, envelope("poll", "intruder", app="unknown-app", iteration=1))
    check(reply["type"] == "error" and reply["code"] == "unknown_app",
          f"remote endpoint, a poll for an application not registered here: '{reply.get('code')}'")
    c = agent.counters()
    got = {r: c.get(f"rejected.remote.{r}", 0) for r in remote_expected}
    check(got == remote_expected, f"remote endpoint: counted {got}, expected {remote_expected}")
    check(not agent.status()["applications"], "nothing registered through the remote endpoint")
    check(agent.alive() and agent.status()["agent"]["id"] == "m0", "the agent still answers status")
