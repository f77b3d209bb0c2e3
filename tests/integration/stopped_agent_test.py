# SPDX-License-Identifier: Apache-2.0
"""An agent stopped (SIGSTOP) for longer than the failure timeout and resumed (SIGCONT) keeps its healthy peers
(issue 46, item 7): its own clock jumped, its peers did not fall silent. Before the fix it dropped each of them at its
first tick after resuming (peer_down, why timeout) and took them back a heartbeat later. Its peer, which did see it
silent, drops it and takes it back: that is the failure detector doing its work."""
import signal

from harness import Cluster, check, wait_for

# After a resumes, b's heartbeats reach it again only once b has taken a back (a's first heartbeat, then b's next):
# about a second here, more on a busy machine, and within a's failure timeout for the test to mean anything (in a
# busy suite run a 2 s timeout was once passed, and a dropped b for that).
HEARTBEAT, TIMEOUT = 0.5, 4.0
config = {"modules": {"profiling": "static", "decision": "none"},
          "membership": {"heartbeat_interval": HEARTBEAT, "failure_timeout": TIMEOUT},
          "work_stealing": {"enabled": False}}


def counter(agent, name):
    return agent.counters().get(name, 0)


with Cluster() as cluster:
    a = cluster.add("a", config)
    b = cluster.add("b", config, [a.endpoint])
    check(wait_for(lambda: a.peers_via_cli() == {"b"} and b.peers_via_cli() == {"a"}, 10), "a and b know each other")

    a.proc.send_signal(signal.SIGSTOP)
    try:
        # Long enough: b's failure detector, which runs, has seen a silent for the timeout.
        check(wait_for(lambda: "a" not in b.peers_via_cli(), 4 * TIMEOUT), "b drops a while a is stopped")
    finally:
        a.proc.send_signal(signal.SIGCONT)
    # b takes a back at a's first heartbeat, sent at a's first tick after resuming: by then that tick has run a's
    # failure detector.
    check(wait_for(lambda: "a" in b.peers_via_cli(), 5), "b takes a back")
    heard = counter(a, "rx.heartbeat")
    check(wait_for(lambda: counter(a, "rx.heartbeat") >= heard + int(TIMEOUT / HEARTBEAT) + 1, 10),
          "a hears b's heartbeats for longer than the failure timeout after resuming")
    check(counter(a, "peers.dropped.timeout") == 0,
          f"a never dropped b for a silence of its own making ({counter(a, 'peers.dropped.timeout')} drops)")
    check(a.peers_via_cli() == {"b"}, "b is a's peer throughout")
    check(counter(a, "agent.stalls") == 1, "a counted one stall of its own")
