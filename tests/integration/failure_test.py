# SPDX-License-Identifier: Apache-2.0
"""After `kill -9` of an agent every other agent drops it within the failure
timeout plus one heartbeat; after SIGTERM an agent leaves at once, exits 0
within 2 s, and its peers record a graceful leave."""
import signal
import time

from harness import TIME_SCALE as SCALE, Cluster, check, wait_for

HEARTBEAT, TIMEOUT = 0.5, 2.0
# `meson test --setup asan` sets this: there each `malleo peers` this test polls with took about 0.3 s (loaded machine),
# so the times it measures are mostly its own polling. The bounds below are multiplied by it (1 otherwise); wait_for
# stretches its waits by it itself.
config = {"modules": {"profiling": "static"},
          "membership": {"heartbeat_interval": HEARTBEAT, "failure_timeout": TIMEOUT},
          "p2p": {"view_size": 8}, "work_stealing": {"enabled": False}}

with Cluster() as cluster:
    first = cluster.add("f0", config)
    for i in range(1, 6):
        cluster.add(f"f{i}", config, [first.endpoint])
    names = set(cluster.agents)
    full = wait_for(lambda: all(a.peers_via_cli() == names - {n} for n, a in cluster.agents.items()),
                    timeout=10)
    check(full, "six agents know each other")

    victim = cluster.agents["f3"]
    victim.proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    victim.proc.wait()
    others = [a for n, a in cluster.agents.items() if n != "f3"]
    dropped_at = {}

    def all_dropped():
        for a in others:
            if a.name not in dropped_at and "f3" not in a.peers_via_cli():
                dropped_at[a.name] = time.monotonic() - killed
        return len(dropped_at) == len(others)

    check(wait_for(all_dropped, timeout=TIMEOUT + 3 * HEARTBEAT, interval=0.02),
          "every other agent dropped the killed one")
    worst = max(dropped_at.values())
    check(worst <= (TIMEOUT + HEARTBEAT) * SCALE,
          f"within failure timeout + one heartbeat ({worst:.2f} s <= {(TIMEOUT + HEARTBEAT) * SCALE} s)")
    check(all(a.counters().get("peers.dropped.timeout", 0) == 1 for a in others),
          "each counted one timeout drop")

    leaver = cluster.agents["f5"]
    t0 = time.monotonic()
    status = leaver.stop(signal.SIGTERM)
    took = time.monotonic() - t0
    check(status == 0 and took <= 2.0 * SCALE, f"SIGTERM: exit {status} after {took:.2f} s")
    rest = [a for a in others if a.name != "f5"]
    check(wait_for(lambda: all(a.counters().get("peers.dropped.leave", 0) == 1 for a in rest), 1.0),
          "its peers recorded a graceful leave well before the failure timeout")
