# SPDX-License-Identifier: Apache-2.0
"""Endpoints are checked when read, and seeds that do not answer are said (docs/configuration.md, "agent").

A malformed endpoint, as a flag or in the configuration file (listen, advertise, app_listen, peers), stops malleod
at once with one line naming it and exit status 2, before it binds anything. A seed that does not answer (a name
that does not resolve, a socket nobody listens on) is logged as a warning naming it at its first unanswered hello,
then at intervals that double; a seed that answers is never; and a seed that comes up late is no longer warned of
once it has answered. An endpoint another agent holds (a port in use) stops malleod with exit status 1 and a line
naming that endpoint, its key and the flag that picks another."""
import json
import os
import re
import subprocess
from datetime import datetime

from harness import MALLEOD, Cluster, check, wait_for

WARNING = re.compile(r"^(\S+ \S+) \S+ warning seed (\S+) has not answered: (\d+) hellos? unanswered", re.M)


def refuses(cluster, args, said, config=None):
    """malleod with `args` (and `config` as its file) exits 2 with one line on stderr holding `said`."""
    run_dir = os.path.join(cluster.dir, "refused")
    if config is not None:
        path = os.path.join(cluster.dir, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        args = ["--config", path] + args
    r = subprocess.run([MALLEOD, "--run-dir", run_dir] + args, capture_output=True, text=True, timeout=10)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and r.stdout == "" and len(lines) == 1 and said in lines[0]
          and not os.path.exists(os.path.join(run_dir, "agent.json")),
          f"{' '.join(args) if config is None else json.dumps(config)}: exit 2, one line ({r.returncode}: "
          f"{r.stderr.strip()})")


def warnings(agent):
    """(time, seed, unanswered hellos) of each warning about a seed in the agent's log so far."""
    with open(os.path.join(agent.run_dir, "malleod.log")) as f:
        text = f.read()
    return [(datetime.strptime(t, "%Y-%m-%d %H:%M:%S.%f").timestamp(), seed, int(n))
            for t, seed, n in WARNING.findall(text)]


def malformed(cluster):
    refuses(cluster, ["--peer", "foo"], "config key 'agent.peers': 'foo' is not an endpoint")
    refuses(cluster, ["--peer", "node2:5470"], "(tcp://node2:5470?)")
    refuses(cluster, ["--listen", "tcp://127.0.0.1:5470x"], "the port '5470x' is not a number")
    refuses(cluster, ["--listen", "tcp://127.0.0.1"], "'tcp://127.0.0.1' has no port")
    refuses(cluster, ["--peer", "tcp://127.0.0.1:*"], "port * is for binding")
    refuses(cluster, ["--app-listen", "tcp://127.0.0.1:70000"], "config key 'agent.app_listen'")
    refuses(cluster, [], "config key 'agent.peers': 'tcp//node2:5470' is not an endpoint",
            {"agent": {"peers": ["tcp://node1:5470", "tcp//node2:5470"]}})
    refuses(cluster, [], "config key 'agent.advertise': 'tcp://*:5470'", {"agent": {"advertise": "tcp://*:5470"}})
    refuses(cluster, [], "transport 'udp' is not supported", {"agent": {"listen": "udp://0.0.0.0:5470"}})
    # A config path that is a directory ended the agent with an uncaught exception (exit 134).
    refuses(cluster, ["--config", cluster.dir], f"config file '{cluster.dir}': is a directory")


def unanswered(cluster):
    nobody = f"ipc://{cluster.dir}/nobody.sock"
    unresolvable = "tcp://node2.invalid:5470"  # .invalid never resolves (RFC 2606)
    fast = {"agent": {"tick": 0.02}, "membership": {"join_retry": 0.05}}
    alone = cluster.add("alone", fast, seeds=[unresolvable, nobody])

    def enough():
        said = warnings(alone)
        return said if all(sum(1 for w in said if w[1] == s) >= 5 for s in (unresolvable, nobody)) else None
    said = wait_for(enough, 30)
    check(said is not None, f"each unanswered seed is warned of, naming it ({warnings(alone)})")
    hellos = alone.counters().get("tx.hello", 0)
    for seed in (unresolvable, nobody):
        mine = [w for w in said if w[1] == seed]
        check(mine[0][2] == 1, f"{seed}: first said at its first unanswered hello ({mine[0]})")
        gaps = [b[0] - a[0] for a, b in zip(mine, mine[1:])]
        # Doubling, give or take a hello's period (join_retry or the tick, longer on a loaded machine): the next
        # warning comes at the first hello after the interval, so a gap is at least 4/3 of the one before.
        check(all(later >= 1.2 * earlier for earlier, later in zip(gaps, gaps[1:])) and gaps[-1] >= 4 * gaps[0],
              f"{seed}: then at growing intervals ({[round(g, 3) for g in gaps]} s)")
    check(len(said) < hellos / 4, f"{len(said)} warnings for {hellos} hellos: not one a retry")


def answered(cluster):
    a = cluster.add("a")
    b = cluster.add("b", seeds=[a.endpoint])
    check(wait_for(lambda: "a" in b.peers_via_cli(), 10), "b joins through its seed a")
    check(not warnings(b), "a seed that answers is never warned of")


def late(cluster):
    """A seed that comes up after the agent: warned of while it is away, no more once it has answered. An endpoint another agent holds (a port in use) stops malleod with exit status 1 and a line
naming that endpoint, its key and the flag that picks another."""
    endpoint = f"ipc://{cluster.dir}/late-peer.sock"
    fast = {"agent": {"tick": 0.02}, "membership": {"join_retry": 0.05, "heartbeat_interval": 0.05}}
    waiting = cluster.add("waiting", fast, seeds=[f"late@{endpoint}"])
    check(wait_for(lambda: any(w[1] == endpoint for w in warnings(waiting)), 10),
          f"the late seed is warned of while nothing listens on {endpoint}")
    run_dir = os.path.join(cluster.dir, "late")
    with open(os.path.join(cluster.dir, "late.log"), "w") as log:
        # One of the cluster's nodes: its key, the cluster's allowed in.
        config = os.path.join(cluster.dir, "late-config.json")
        with open(config, "w") as f:
            json.dump({"security": {"secret_key": cluster.key_file("late"), "allowed_keys": cluster.keys_dir}}, f)
        late_agent = subprocess.Popen([MALLEOD, "--config", config, "--id", "late", "--listen", endpoint,
                                       "--run-dir", run_dir],
                                      stdout=log, stderr=subprocess.STDOUT)
        try:
            check(wait_for(lambda: "late" in waiting.peers_via_cli(), 10), "the late seed answers: a peer")
            said = len(warnings(waiting))
            # Proof of time passing with the peer there: 20 more heartbeats sent to it (one each 0.05 s).
            beats = waiting.counters().get("tx.heartbeat", 0)
            check(wait_for(lambda: waiting.counters().get("tx.heartbeat", 0) >= beats + 20, 10),
                  "the agent heartbeats its peer")
            check(len(warnings(waiting)) == said, "no more warnings once the seed has answered")
        finally:
            late_agent.terminate()
            late_agent.wait(10)


def taken(cluster):
    """--listen or --app-listen on the port of a running agent: which endpoint is taken and how to pick another."""
    holder = cluster.add("holder")
    check(holder.endpoint.startswith("tcp://127.0.0.1:"), f"the holder listens on TCP ({holder.endpoint})")
    config = os.path.join(cluster.dir, "taken-config.json")
    with open(config, "w") as f:
        json.dump({"security": {"secret_key": cluster.key_file("taken"), "allowed_keys": cluster.keys_dir}}, f)
    for flags, key, flag in ((["--listen", holder.endpoint], "agent.listen", "--listen"),
                             (["--listen", "tcp://127.0.0.1:0", "--app-listen", holder.endpoint], "agent.app_listen",
                              "--app-listen")):
        run_dir = os.path.join(cluster.dir, "taken")
        r = subprocess.run([MALLEOD, "--config", config, "--id", "taken", "--run-dir", run_dir, "--log-level", "warn",
                            *flags], capture_output=True, text=True, timeout=10)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and
              f"cannot listen on '{holder.endpoint}' ({key}): Address already in use" in lines[0] and
              f"pick another with {flag} tcp://HOST:PORT or {key} (port 0: any free one)" in lines[0],
              f"{' '.join(flags)}: exit 1, one line naming the endpoint taken and {flag} ({r.returncode}: "
              f"{r.stderr.strip()})")


with Cluster() as cluster:
    taken(cluster)
    malformed(cluster)
    unanswered(cluster)
    answered(cluster)
    late(cluster)
