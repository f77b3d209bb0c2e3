# SPDX-License-Identifier: Apache-2.0
"""Authenticated agents (docs/deployment.md), real malleod processes over real sockets: a node whose key is not in
security.allowed_keys is refused at the CURVE handshake, counted, and logged once per address however often it tries;
an allowed node that sends a leave, an unlink or a heartbeat in another node's name is refused and the real peer
stays; a stranger cannot poll the remote application endpoint, so a queued command stays queued; a node whose .pub
is removed is refused on the connections it had open; TCP without keys is refused at start unless security.plain says so, which warns; a bad key file is one line
naming it."""
import json
import os
import subprocess
import time

import zmq

import msgpack

from harness import (MALLEO, MALLEOD, Cluster, check, envelope, frames, local_request, read_key, static_profile,
                     wait_for)

wire_profile = {"pw": 1.0, "apw": 0.5, "upw": 0.5, "sigma": 0.0, "ctxsw": 0.0, "cores": 1, "procs": 0}
config = {"modules": {"profiling": "static", "decision": "none"}, "static": static_profile(0.2),
          "work_stealing": {"enabled": False},
          "membership": {"heartbeat_interval": 0.1, "failure_timeout": 3.0}}
ctx = zmq.Context.instance()


def log_lines(agent, text):
    with open(os.path.join(agent.run_dir, "malleod.log")) as f:
        return [line for line in f if text in line]


def stranger_hello(endpoint, server_key):
    """A CURVE client with a key of its own (in no allowed set) that sends a hello to endpoint."""
    public, secret = zmq.curve_keypair()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.curve_secretkey, s.curve_publickey, s.curve_serverkey = secret, public, server_key
    s.connect(endpoint)
    s.send_multipart(frames(envelope("hello", "stranger", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                     profile=wire_profile)), zmq.NOBLOCK)
    return s


with Cluster() as cluster:
    n1 = cluster.add("n1", config)
    n2 = cluster.add("n2", config, seeds=[n1.endpoint])
    check(wait_for(lambda: "n2" in n1.peers_via_cli() and "n1" in n2.peers_via_cli(), 10),
          "two authenticated agents (a key pair each, cluster keys allowed) form an overlay")
    check(log_lines(n1, "CURVE on"), "the agent says CURVE is on")

    # 1. An agent with a key pair of its own, not in n1's allowed keys: its hello never makes it a peer.
    outside = os.path.join(cluster.dir, "outside-keys")
    subprocess.run([MALLEO, "keygen", "--dir", outside, "intruder"], check=True, capture_output=True)
    # It lets n1 in (n1's .pub copied), so only n1's side refuses.
    with open(os.path.join(cluster.keys_dir, "n1.pub")) as f, open(os.path.join(outside, "n1.pub"), "w") as g:
        g.write(f.read())
    intruder = cluster.add("intruder", {**config, "security": {"secret_key": os.path.join(outside, "intruder.key"),
                                                               "allowed_keys": outside}}, seeds=[n1.endpoint])
    check(wait_for(lambda: n1.counter("auth.refused.peer") >= 1, 10),
          f"n1 refuses the intruder's key at the handshake ({n1.counters().get('auth.refused.peer')})")
    # Further attempts from the same address, each a new connection with a new key.
    n1_key = read_key(os.path.join(cluster.keys_dir, "n1.pub"))
    before = n1.counter("auth.refused.peer")
    tries = [stranger_hello(n1.endpoint, n1_key) for _ in range(5)]
    check(wait_for(lambda: n1.counter("auth.refused.peer") >= before + 5, 10),
          f"every refused handshake is counted ({before} -> {n1.counter('auth.refused.peer')})")
    for s in tries:
        s.close()
    r = n1.cli("status", "--json")
    check(r.returncode == 0 and json.loads(r.stdout)["counters"].get("auth.refused.peer", 0) >= before + 5,
          "malleo status shows the refusals")
    refused_lines = log_lines(n1, "refused a peer inbox client from 127.0.0.1")
    check(len(refused_lines) == 1, f"one log line for the address, not one per attempt ({len(refused_lines)})")
    check("intruder" not in n1.peers_via_cli() and "stranger" not in n1.peers_via_cli(),
          "neither the intruder nor the stranger is a peer of n1")
    check(not intruder.peers_via_cli(), "the intruder has no peer")

    # 2. An allowed node (n3, whose key the cluster made) speaks in n2's name on one connection: a leave, an unlink
    # and a heartbeat naming its own endpoint. Each is refused; n2 stays n1's peer.
    spoof = ctx.socket(zmq.DEALER)
    spoof.setsockopt(zmq.LINGER, 1000)
    cluster.as_node(spoof, "n3", "n1")
    spoof.connect(n1.endpoint)
    sink = ctx.socket(zmq.ROUTER)
    sink_endpoint = f"tcp://127.0.0.1:{sink.bind_to_random_port('tcp://127.0.0.1')}"
    mismatch = n1.counter("rejected.peer.from_mismatch")
    spoof.send_multipart(frames(envelope("leave", "n2", 1)))
    spoof.send_multipart(frames(envelope("unlink", "n2", 2)))
    spoof.send_multipart(frames(envelope("heartbeat", "n2", 3, endpoint=sink_endpoint, profile=wire_profile,
                                         in_view=True)))
    # Then, on the same connection, a hello in n3's own name: accepted (n3 is allowed), so the three before it have
    # been handled once n3 is a peer.
    spoof.send_multipart(frames(envelope("hello", "n3", 4, endpoint=sink_endpoint, agent_version="1",
                                         profile=wire_profile)))
    check(wait_for(lambda: "n3" in n1.peers_via_cli(), 10), "a hello in the sender's own name is accepted")
    check(n1.counter("rejected.peer.from_mismatch") == mismatch + 3,
          f"the leave, unlink and heartbeat in n2's name are refused ({n1.counter('rejected.peer.from_mismatch')})")
    peers = n1.request("peers")["peers"]
    n2_entry = [p for p in peers if p["id"] == "n2"]
    check(n2_entry and n2_entry[0]["endpoint"] == n2.endpoint,
          f"n2 is still n1's peer, at its own endpoint ({n2_entry})")
    check(n1.counter("rx.leave") == 0 and n1.counter("rx.unlink") == 0, "no leave or unlink was taken")
    beats = n1.counter("rx.heartbeat")
    check(wait_for(lambda: n1.counter("rx.heartbeat") >= beats + 5 and "n2" in n1.peers_via_cli(), 10),
          "n2's own heartbeats keep arriving")
    spoof.close()
    sink.close()

    # 3. A plain client (no CURVE) is not heard at all on an authenticated inbox.
    hellos = n1.counter("rx.hello")
    plain = ctx.socket(zmq.DEALER)
    plain.setsockopt(zmq.LINGER, 0)
    plain.connect(n1.endpoint)
    plain.send_multipart(frames(envelope("hello", "plainly", endpoint="tcp://127.0.0.1:9", agent_version="1",
                                         profile=wire_profile)), zmq.NOBLOCK)
    # A message that is heard, sent after it by an allowed node, proves time for the plain one to have arrived.
    probe = ctx.socket(zmq.DEALER)
    probe.setsockopt(zmq.LINGER, 1000)
    cluster.as_node(probe, "n4", "n1")
    probe.connect(n1.endpoint)
    probe.send_multipart(frames(envelope("hello", "n4", 1, endpoint="tcp://127.0.0.1:9", agent_version="1",
                                         profile=wire_profile)))
    check(wait_for(lambda: "n4" in n1.peers_via_cli(), 10), "an allowed node's hello arrives")
    check("plainly" not in n1.peers_via_cli() and n1.counter("rx.hello") == hellos + 1,
          "the plain client's hello is never read")
    plain.close()
    probe.close()

    # 4. The remote application endpoint: a command queued for an application rooted at n1; a stranger's poll (a
    # key of its own) is refused at the handshake, so the command stays queued for the coordinator on n2.
    for rank in (0, 1):
        reply = local_request(n1.local, envelope("register", "heat-rank", rank + 1, app="heat", rank=rank,
                                                 pid=os.getpid(), size=2, malleable=True, units=4))
        check(reply["type"] == "ack", f"rank {rank} registers with n1")
    reply = local_request(n1.local, envelope("force", "test", 1, app="heat", op="merge", count=1))
    check(reply["type"] != "error", f"a merge is queued for heat ({reply})")
    remote = n1.info["app_remote"]

    def poll(secret, public, timeout=2.0):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.curve_secretkey, s.curve_publickey, s.curve_serverkey = secret, public, n1_key
        s.connect(remote)
        try:
            s.send_multipart(frames(envelope("poll", "malleo-pcm", 1, app="heat", iteration=1, size=2)))
            if not s.poll(int(timeout * 1000)):
                return None
            return msgpack.unpackb(s.recv_multipart()[1])
        finally:
            s.close()
    public, secret = zmq.curve_keypair()
    check(poll(secret, public) is None, "a stranger's poll on the remote endpoint gets no answer")
    check(wait_for(lambda: n1.counter("auth.refused.remote") >= 1, 5),
          f"it is refused at the handshake and counted ({n1.counter('auth.refused.remote')})")
    check(n1.counter("rx.remote.poll") == 0, "no poll was read")
    n2_secret = read_key(os.path.join(cluster.keys_dir, "n2.key"))
    taken = poll(n2_secret, zmq.curve_public(n2_secret))
    check(taken and taken.get("type") == "command" and taken.get("op") == "merge",
          f"the queued command is still there for a coordinator with its node's key (n2): {taken}")

    # 6. Revocation: n4's .pub removed while its connections stay open. ZeroMQ checks a key at the handshake only;
    # the agent refuses what comes on those connections afterwards, on the peer inbox and the remote endpoint.
    peer = ctx.socket(zmq.DEALER)
    peer.setsockopt(zmq.LINGER, 1000)
    cluster.as_node(peer, "n4", "n1")
    peer.connect(n1.endpoint)
    n4_secret = read_key(os.path.join(cluster.keys_dir, "n4.key"))
    app = ctx.socket(zmq.DEALER)
    app.setsockopt(zmq.LINGER, 0)
    app.curve_secretkey, app.curve_publickey, app.curve_serverkey = n4_secret, zmq.curve_public(n4_secret), n1_key
    app.connect(remote)

    # An application of its own, which n4 coordinates (heat's is n2, whose merge is in flight: node_keys_test.py).
    reply = local_request(n1.local, envelope("register", "cool-rank", 1, app="cool", rank=0, pid=os.getpid(), size=1,
                                             malleable=True, units=1))
    check(reply["type"] == "ack", "rank 0 of cool registers with n1")

    def app_poll(seq):
        app.send_multipart(frames(envelope("poll", "malleo-pcm", seq, app="cool", iteration=seq, size=1)))
        return msgpack.unpackb(app.recv_multipart()[1]) if app.poll(5000) else None
    hellos = n1.counter("rx.hello")
    peer.send_multipart(frames(envelope("hello", "n4", 20, endpoint="tcp://127.0.0.1:9", agent_version="1",
                                        profile=wire_profile)))
    check(wait_for(lambda: n1.counter("rx.hello") == hellos + 1, 10), "n4, allowed, is heard on its connection")
    answer = app_poll(1)
    check(answer and answer.get("type") != "error", f"n4's key polls the remote endpoint ({answer})")
    os.remove(os.path.join(cluster.keys_dir, "n4.pub"))
    peer.send_multipart(frames(envelope("hello", "n4", 21, endpoint="tcp://127.0.0.1:9", agent_version="1",
                                        profile=wire_profile)))
    check(wait_for(lambda: n1.counter("rejected.peer.revoked") == 1, 10),
          f"after its .pub is removed, n4's next message on the same connection is refused as revoked "
          f"({n1.counter('rejected.peer.revoked')})")
    check(n1.counter("rx.hello") == hellos + 1, "and not taken")
    answer = app_poll(2)
    check(answer and answer.get("type") == "error" and answer.get("code") == "revoked",
          f"so is its next poll on the remote endpoint's open connection ({answer})")
    peer.close()
    app.close()

    # 5. Starting: TCP without keys is refused with one line saying what to do; security.plain starts and warns.
    def start(conf, name):
        path = os.path.join(cluster.dir, name + ".json")
        with open(path, "w") as f:
            json.dump(conf, f)
        return subprocess.run([MALLEOD, "--config", path, "--id", name, "--listen", "tcp://127.0.0.1:*",
                               "--run-dir", os.path.join(cluster.dir, name)], capture_output=True, text=True,
                              timeout=10)
    r = start({}, "keyless")
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and "malleo keygen" in lines[0] and "security.plain" in lines[0],
          f"no keys, no security.plain: refused with one line ({r.returncode}: {r.stderr.strip()})")
    bad_key = os.path.join(cluster.dir, "bad.key")
    with open(bad_key, "w") as f:
        f.write("not a key\n")
    r = start({"security": {"secret_key": bad_key, "allowed_keys": cluster.keys_dir}}, "badkey")
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and bad_key in lines[0],
          f"a bad key file: one line naming it ({r.returncode}: {r.stderr.strip()})")
    r = start({"security": {"secret_key": os.path.join(cluster.keys_dir, "n1.key"),
                            "allowed_keys": os.path.join(cluster.dir, "nowhere")}}, "nokeys")
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and "nowhere" in lines[0],
          f"a missing allowed_keys directory: one line naming it ({r.returncode}: {r.stderr.strip()})")
    open_agent = cluster.add("open", {**config, "security": {"plain": True}})
    check(log_lines(open_agent, "security.plain: peers and coordinators are not authenticated"),
          "security.plain starts, with a warning line")
