# SPDX-License-Identifier: Apache-2.0
"""Work stealing between real agents on a chain a0 - a1 - ... - a5 (views of one
peer, no gossip): a WRM from the idle a0 reaches the loaded a5 five hops away and
is answered; with TTL 2 it is dropped at a2 and counted, and a0 retries. Then a peer
killed while it holds a WRM: the origin's retry finds another path."""
import json
import signal

from harness import Cluster, check, static_profile, wait_for

N = 6


def chain(cluster, ttl):
    for i in range(N):
        config = {
            "modules": {"profiling": "static", "protocol": "p2p", "decision": "loaddiff"},
            "static": static_profile(0.05 if i == N - 1 else 0.9),
            "p2p": {"view_size": 1, "shuffle_interval": 0, "gossip_fanout": 0},
            "membership": {"gossip_interval": 0},
            "work_stealing": {"enabled": i == 0, "on_join": False, "ttl": ttl,
                              "timeout": 0.5, "backoff_initial": 0.5, "backoff_max": 2.0},
        }
        seeds = [cluster.agents[f"a{i - 1}"].endpoint] if i else []
        cluster.add(f"a{i}", config, seeds)
    return [cluster.agents[f"a{i}"] for i in range(N)]


with Cluster() as cluster:
    agents = chain(cluster, ttl=8)
    origin = agents[0]
    answered = wait_for(lambda: origin.counters().get("wrm.answered", 0) >= 1, timeout=10)
    check(answered, "the idle agent's WRM was answered")
    # The event streams (recent history first) show the answer and its reasons.
    def events(agent, type_):
        r = agent.cli("events", "--json", "--for", "0.5")
        return [e for e in map(json.loads, r.stdout.splitlines()) if e.get("type") == type_]

    replies = events(origin, "wrm_reply")
    check(replies and replies[0]["responder"] == "a5" and replies[0]["hops"] == N - 1,
          f"a0's events show the reply from a5 after {N - 1} hops: {replies[:1]}")
    answers = events(agents[-1], "wrm_answered")
    check(answers and answers[0]["origin"] == "a0" and "local_upw" in answers[0]["reasons"],
          f"a5's events show the answer with its reasons: {answers[:1]}")
    for i in range(1, N - 1):
        c = agents[i].counters()
        check(c.get("wrm.forwarded", 0) >= 1, f"a{i} forwarded it ({c.get('wrm.forwarded', 0)})")
    c = agents[-1].counters()
    check(c.get("decisions.wrm_answer", 0) >= 1, "a5 decided to answer")
    check(origin.counters().get("rx.wrm_reply", 0) >= 1, "a0 received the reply")

with Cluster() as cluster:
    agents = chain(cluster, ttl=2)
    expired = wait_for(lambda: agents[2].counters().get("wrm.ttl_expired", 0) >= 2, timeout=10)
    check(expired, "a WRM with TTL 2 is dropped at a2 and counted")
    c0 = agents[0].counters()
    check(c0.get("wrm.answered", 0) == 0, "nobody answered a0")
    check(c0.get("wrm.unanswered", 0) >= 1 and c0.get("wrm.retries", 0) >= 1,
          f"a0 noticed ({c0.get('wrm.unanswered', 0)}) and retried ({c0.get('wrm.retries', 0)})")
    check(agents[3].counters().get("rx.wrm", 0) == 0, "no WRM went past its TTL")

# A peer that disappears while a WRM passes through it. a0's view holds a1 and a3; a WRM goes to the most loaded peer
# in view, a1, frozen (SIGSTOP) before a0 becomes idle, so it holds a0's WRM, and then killed: a0's retry, once a1 is
# gone, finds the other path, to a3, which answers.
IDLE_AT = 2.0
with Cluster() as cluster:
    def config(apw, schedule=()):
        profile = static_profile(apw)
        if schedule:
            profile["schedule"] = list(schedule)
        return {"modules": {"profiling": "static", "protocol": "p2p", "decision": "loaddiff"},
                "static": profile,
                "membership": {"heartbeat_interval": 0.3, "failure_timeout": 4.0},
                "work_stealing": {"enabled": bool(schedule), "on_join": False, "timeout": 0.5,
                                  "backoff_initial": 0.5, "backoff_max": 1.0}}
    a3 = cluster.add("a3", config(0.1))
    a1 = cluster.add("a1", config(0.02), [a3.endpoint])
    # Loaded until IDLE_AT seconds after its first sample, then idle: its first WRM comes once a1 is frozen.
    a0 = cluster.add("a0", config(0.05, schedule=[{"at": IDLE_AT, "apw": 0.9}]), [a1.endpoint, a3.endpoint])
    check(wait_for(lambda: a0.peers_via_cli(in_view_only=True) == {"a1", "a3"}, IDLE_AT - 0.5),
          "a0 joined, a1 and a3 in its view")
    a1.proc.send_signal(signal.SIGSTOP)

    def sent_to():
        r = a0.cli("events", "--json", "--for", "0.3")
        return [e["to"] for e in map(json.loads, r.stdout.splitlines()) if e.get("type") == "wrm_sent"]
    try:
        check(wait_for(lambda: sent_to()[:1] == ["a1"], IDLE_AT + 5, 0.2),
              f"idle, a0 sends its WRM to the most loaded peer, a1, which holds it ({sent_to()})")
    finally:
        a1.stop(signal.SIGKILL)
    answered = wait_for(lambda: a0.counters().get("wrm.answered", 0) >= 1, 15)
    c0 = a0.counters()
    check(answered and c0.get("wrm.unanswered", 0) >= 1 and c0.get("wrm.retries", 0) >= 1,
          f"the WRM through a1 went unanswered, and a retry was answered ({c0})")
    check(sent_to()[-1] == "a3", f"the answered retry went to a3 ({sent_to()})")
    replies = [e for e in map(json.loads, a0.cli("events", "--json", "--for", "0.3").stdout.splitlines())
               if e.get("type") == "wrm_reply"]
    check(replies and replies[0]["responder"] == "a3", f"a3 answered ({replies[:1]})")
