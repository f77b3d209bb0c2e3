# SPDX-License-Identifier: Apache-2.0
"""A node's key grants what that node may do and no more (issue 46, items 2 and 3), real malleod processes under
CURVE over real sockets:
- another node's key (n2's) on n1's remote application endpoint takes no queued command while the application's
  coordinator polls n1 (the command stays queued and is then given to the real coordinator), and its forged result
  (ok, 64 processes, a cost of 1e300, terminal escapes) is refused and counted: neither n1's state nor its events
  record it, the command stays in flight and the real coordinator's result is taken, its text without escapes;
- a connection that claims n2's routing id on n1's peer inbox (an allowed key, n3's, and with no key at all on a plain
  cluster) does not make n1 drop n2: n2's heartbeats keep arriving and n2 stays n1's peer over a window of many
  failure timeouts."""
import os
import time

import msgpack
import zmq

from harness import TIME_SCALE, Cluster, check, envelope, frames, local_request, read_key, static_profile, wait_for

config = {"modules": {"profiling": "static", "decision": "none"}, "static": static_profile(0.2),
          "work_stealing": {"enabled": False},
          "membership": {"heartbeat_interval": 0.1, "failure_timeout": 1.0}}
ctx = zmq.Context.instance()


def heat(agent):
    return next(a for a in local_request(agent.local, envelope("apps"))["apps"] if a["id"] == "heat")


def commands_of(cluster, n1):
    n1_key = read_key(os.path.join(cluster.keys_dir, "n1.pub"))
    n2_secret = read_key(os.path.join(cluster.keys_dir, "n2.key"))
    remote = ctx.socket(zmq.DEALER)
    remote.setsockopt(zmq.LINGER, 0)
    remote.curve_secretkey, remote.curve_publickey, remote.curve_serverkey = (
        n2_secret, zmq.curve_public(n2_secret), n1_key)
    remote.connect(n1.info["app_remote"])

    def as_n2(type_, seq, **fields):
        remote.send_multipart(frames(envelope(type_, "malleo-pcm", seq, app="heat", **fields)))
        return msgpack.unpackb(remote.recv_multipart()[1]) if remote.poll(int(5000 * TIME_SCALE)) else None

    def as_coordinator(type_, seq, **fields):
        return local_request(n1.local, envelope(type_, "malleo-pcm", seq, app="heat", **fields))

    for rank in (0, 1):
        reply = local_request(n1.local, envelope("register", "heat-rank", rank + 1, app="heat", rank=rank,
                                                 pid=os.getpid(), size=2, malleable=True, units=4))
        check(reply["type"] == "ack", f"rank {rank} of heat registers with n1")
    check(as_coordinator("poll", 1, iteration=1, size=2)["op"] == "none",
          "heat's coordinator polls n1's local endpoint")
    forced = local_request(n1.local, envelope("force", "operator", 1, app="heat", op="split", count=2))
    check(forced["type"] == "force_reply", f"the operator's split 2 is queued ({forced})")
    command = forced["command"]

    # n2's key, allowed in, polls for heat's commands: refused, and the split stays queued.
    taken = as_n2("poll", 1, iteration=1, size=64)
    check(taken and taken["type"] == "error" and taken["code"] == "not_coordinator",
          f"n2's poll on n1's remote endpoint takes no command: {taken}")
    check(heat(n1)["command"]["state"] == "queued" and heat(n1)["size"] == 2,
          f"the split stays queued and heat's size is not n2's ({heat(n1)['command']}, size {heat(n1)['size']})")
    check(n1.counter("commands.polls_refused.not_coordinator") == 1, "the refused poll is counted")

    # The real coordinator takes it.
    given = as_coordinator("poll", 2, iteration=2, size=2)
    check(given["op"] == "split" and given["command"] == command,
          f"the real coordinator's next poll is given the split ({given})")

    # n2 reports a forged result for it: refused, counted, nothing recorded, the command still in flight.
    forged = as_n2("result", 2, command=command, ok=True, before=2, after=64, duration=1e300, iteration=2,
                   text="\x1b]0;owned\x07\x1b[2Jsplit done")
    check(forged and forged["type"] == "error" and forged["code"] == "not_coordinator",
          f"n2's forged result is refused: {forged}")
    app = heat(n1)
    check(app["command"]["state"] == "sent" and app["last_result"] is None and app["size"] == 2
          and app["redistribution_cost"] is None,
          f"n1's state does not record it ({app['command']}, {app['last_result']}, {app['size']})")
    check(n1.counter("commands.results_refused.not_coordinator") == 1 and n1.counter("commands.ok") == 0,
          "the refusal is counted, no result taken")

    # The coordinator's own report is taken, once; its text loses the escapes.
    done = as_coordinator("result", 3, command=command, ok=True, before=2, after=4, duration=0.2, iteration=2,
                          text="split \x1b[31mdone\x07")
    check(done["type"] == "ack", f"the real coordinator's result is taken ({done})")
    app = heat(n1)
    check(app["last_result"]["after"] == 4 and app["last_result"]["text"] == "split [31mdone" and app["size"] == 4,
          f"it is heat's last result, text without controls ({app['last_result']})")
    results = wait_for(lambda: n1.events("command_result"), 5)
    check(results and len(results) == 1 and results[0]["after"] == 4 and "\x1b" not in results[0]["text"],
          f"n1's event log has one command_result, the real one ({results})")
    remote.close()


def clash(cluster, n1, n2, claimer):
    """Connections that claim n2's routing id on n1's peer inbox, from `claimer`'s key (None: no key), for a window
    of several failure timeouts; n2 must stay n1's peer throughout."""
    beats = n1.counter("rx.heartbeat")
    claims = []
    for i in range(4):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.ROUTING_ID, b"n2")
        s.setsockopt(zmq.RECONNECT_IVL, 10)  # back at once whenever it is cut
        if claimer:
            cluster.as_node(s, claimer, "n1")
        s.connect(n1.endpoint)
        claims.append(s)
    window = 4.0 * TIME_SCALE
    end = time.monotonic() + window
    seen = True
    seq = 0
    while time.monotonic() < end:
        for s in claims:
            seq += 1
            # In its own name: in plain mode a message in n2's name is n2's (docs/reliability.md), this is about ids.
            s.send_multipart(frames(envelope("gossip", claimer or "stranger", seq, peers=[])), zmq.NOBLOCK)
        seen = seen and "n2" in n1.peers_via_cli()
        time.sleep(0.1)
    for s in claims:
        s.close()
    drops = [e for e in n1.events("peer_down") if e.get("peer") == "n2"]
    check(seen and not drops, f"n2 stays n1's peer through {window:g} s of claims of its routing id "
                              f"(failure timeout 1 s; peer_down: {drops})")
    check(n1.counter("rx.heartbeat") >= beats + 20,
          f"n2's heartbeats kept arriving ({n1.counter('rx.heartbeat') - beats} in the window)")


with Cluster() as cluster:
    n1 = cluster.add("n1", config)
    n2 = cluster.add("n2", config, seeds=[n1.endpoint])
    check(wait_for(lambda: "n2" in n1.peers_via_cli() and "n1" in n2.peers_via_cli(), 10),
          "n1 and n2, authenticated, form an overlay")
    commands_of(cluster, n1)
    cluster.key_file("n3")  # an allowed node of the cluster that claims to be n2
    clash(cluster, n1, n2, "n3")
    check(wait_for(lambda: n1.counter("rejected.peer.routing_id_mismatch") >= 4, 5),
          f"what n3 sent under n2's routing id is refused ({n1.counter('rejected.peer.routing_id_mismatch')})")

with Cluster(plain=True) as cluster:
    n1 = cluster.add("n1", config)
    n2 = cluster.add("n2", config, seeds=[n1.endpoint])
    check(wait_for(lambda: "n2" in n1.peers_via_cli() and "n1" in n2.peers_via_cli(), 10),
          "plain: n1 and n2 form an overlay")
    clash(cluster, n1, n2, None)
