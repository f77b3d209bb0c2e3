# SPDX-License-Identifier: Apache-2.0
"""Fidelity: the same timed sequence of peer and local messages, fed to a real
malleod (through its sockets, static profiling, decision ios) and to one
simulated node (malleo-sim --replay), gives the same decisions, the same local
replies and the same outgoing messages. Heartbeats are periodic, so their
number depends on the wall clock: they are left out; everything sent in answer
to a message is compared field by field, ids and the agent's own endpoint
aside."""
import json
import os
import subprocess
import sys
import tempfile
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from harness import HEADER, Cluster, check, envelope, frames, local_request, send_raw

SIM = os.environ["MALLEO_SIM"]
AGENT = "n00000"
COMPARED_SENDS = {"welcome", "wrm_reply", "wrm", "error", "unlink", "leave"}
COMPARED_EVENTS = {"action", "wrm_answered", "wrm_forwarded", "wrm_dead_end", "wrm_expired",
                   "app_registered", "app_gone", "peer_up", "rejected", "joined"}

CONFIG = {
    "agent": {"tick": 0.05, "decision_interval": 0.5, "profile_interval": 2.0},
    "modules": {"profiling": "static", "protocol": "p2p", "decision": "ios"},
    "static": {"pw": 2.0, "cores": 2, "apw": 0.1},
    "membership": {"gossip_interval": 0, "heartbeat_interval": 0.5, "failure_timeout": 60},
    "work_stealing": {"enabled": False},
    "p2p": {"shuffle_interval": 0, "gossip_fanout": 0},
}


def steps(peer_endpoint):
    idle = {"pw": 2.0, "apw": 1.0, "upw": 0.0, "sigma": 0.0, "ctxsw": 0.0, "cores": 2, "procs": 0}
    busy = dict(idle, apw=0.05, upw=0.95)
    s = []
    for rank in range(4):
        s.append({"local": envelope("register", "proc", 10 + rank, app="heat", rank=rank,
                                    pid=4000 + rank, size=4, malleable=True, units=1)})
    for rank in range(4):
        extra = {"iteration_times": [2.0]} if rank == 0 else {}
        s.append({"local": envelope("app_report", "proc", 20 + rank, app="heat", rank=rank, size=4,
                                    units=1, bytes_local=1e5, bytes_remote=0.0, cpu_share=0.45,
                                    **extra)})
    s.append({"peer": envelope("hello", "p1", 1, endpoint=peer_endpoint, agent_version="0.1.0",
                               group="", profile=idle)})
    wrm = dict(origin="p1", origin_endpoint=peer_endpoint, ttl=3, hops=1, visited=["p1"])
    s.append({"peer": envelope("wrm", "p1", 2, origin_profile=idle, wrm_id=1, **wrm)})
    s.append({"peer": envelope("wrm", "p1", 3, origin_profile=busy, wrm_id=2, **wrm)})
    s.append({"peer": envelope("nonsense", "p1", 4)})
    s.append({"local": envelope("deregister", "proc", 30, app="heat", rank=3)})
    # The agent samples its profile every 2 s from its start, and the profile
    # counts the registered processes: the registrations fall between the
    # samples at 0 and 2 s, the peer messages between 4 and 6 s, each far
    # from a sample, so that both agents answer with the same profile, and
    # past ios's `settle` (2 s) after the last registration, so that the work
    # request is planned rather than put off.
    for i, step in enumerate(s[:8]):
        step["at"] = 0.6 + 0.08 * i
    for i, step in enumerate(s[8:]):
        step["at"] = 4.6 + 0.15 * i
    return s


def normalise(message, self_endpoint):
    m = {k: v for k, v in message.items() if k not in ("id", "seq", "t")}
    for key in ("endpoint", "origin_endpoint"):
        if m.get(key) == self_endpoint:
            m[key] = "SELF"
    return m


def from_sim(lines):
    sends, events, replies = [], [], []
    for line in lines:
        record = json.loads(line)
        if "message" in record and record["message"]["type"] in COMPARED_SENDS:
            sends.append(normalise(record["message"], "sim://" + AGENT))
        elif "event" in record and record["event"]["type"] in COMPARED_EVENTS:
            events.append(normalise(record["event"], "sim://" + AGENT))
        elif "reply" in record:
            replies.append(normalise(record["reply"], "sim://" + AGENT))
    return sends, events, replies


ctx = zmq.Context.instance()
inbox = ctx.socket(zmq.ROUTER)
inbox.setsockopt(zmq.LINGER, 0)
inbox.bind("tcp://127.0.0.1:*")
peer_endpoint = inbox.getsockopt_string(zmq.LAST_ENDPOINT)
sequence = steps(peer_endpoint)

with tempfile.TemporaryDirectory(prefix="malleo-sim-fid-") as tmp:
    replay = os.path.join(tmp, "replay.json")
    with open(replay, "w") as f:
        json.dump({"agent": dict(CONFIG, agent=dict(CONFIG["agent"], id=AGENT)),
                   "until": sequence[-1]["at"] + 1.0, "steps": sequence}, f)
    r = subprocess.run([SIM, "--replay", replay], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"malleo-sim --replay exits 0 ({r.stderr.strip()})")
    sim_sends, sim_events, sim_replies = from_sim(r.stdout.splitlines())

check(any(e["type"] == "action" for e in sim_events), "the simulated node decided an action")
check(any(m["type"] == "wrm_reply" for m in sim_sends), "the simulated node answered a WRM")

# Plain TCP: the test speaks as peer p1 with raw frames, which CURVE would refuse (no key of p1).
with Cluster(plain=True) as cluster:
    agent = cluster.add(AGENT, CONFIG)
    self_endpoint = agent.endpoint
    events_socket = ctx.socket(zmq.DEALER)
    events_socket.setsockopt(zmq.LINGER, 0)
    events_socket.connect(agent.local)
    events_socket.send_multipart(frames(envelope("events", "test", 1)))

    real_sends, real_events, real_replies = [], [], []

    def drain(timeout_ms=0):
        while inbox.poll(timeout_ms):
            _, header, body = inbox.recv_multipart()
            m = msgpack.unpackb(body)
            if m["type"] in COMPARED_SENDS:
                real_sends.append(normalise(m, self_endpoint))
            timeout_ms = 0
        while events_socket.poll(0):
            header, body = events_socket.recv_multipart()
            m = msgpack.unpackb(body)
            if m["type"] == "event" and m["event"]["type"] in COMPARED_EVENTS:
                real_events.append(normalise(m["event"], self_endpoint))

    def settle(expected_sends, expected_events, timeout=5.0):
        # Waits for what the simulated node did in answer to the steps so far.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            drain(20)
            if len(real_sends) >= expected_sends and len(real_events) >= expected_events:
                return

    def counts_until(at):
        # What the simulated node had sent and decided by the time of a step.
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        s = sum(1 for x in lines if x["t"] <= at and "message" in x
                and x["message"]["type"] in COMPARED_SENDS)
        e = sum(1 for x in lines if x["t"] <= at and "event" in x
                and x["event"]["type"] in COMPARED_EVENTS)
        return s, e

    # The sequence is timed: each step is sent at its time after the agent
    # started (agent.json appears just after the start, so the steps reach it
    # at most a few tens of milliseconds late, far from any sample).
    started = time.monotonic()
    for step in sequence:
        delay = started + step["at"] - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if "local" in step:
            real_replies.append(normalise(local_request(agent.local, step["local"]), self_endpoint))
        else:
            send_raw(agent.endpoint, frames(step["peer"]))
        settle(*counts_until(step["at"]))
    settle(len(sim_sends), len(sim_events))
    drain(200)
    events_socket.close()

# The daemon's "started" event and those before the subscription are the same
# on both sides; compare from the first event the sequence caused.
check(real_replies == sim_replies,
      f"the same {len(sim_replies)} local replies\n  real {real_replies}\n  sim  {sim_replies}")
check(real_sends == sim_sends,
      f"the same {len(sim_sends)} messages sent in answer\n  real {real_sends}\n  sim  {sim_sends}")
check(real_events == sim_events,
      f"the same {len(sim_events)} decisions and events\n  real {real_events}\n  sim  {sim_events}")
inbox.close()
