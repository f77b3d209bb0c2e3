# SPDX-License-Identifier: Apache-2.0
"""Starts real malleod processes on loopback and talks to them as the CLI and
peers do: the integration tests' harness, and the loop's benchmark's (bench/loop.py). Paths come from the environment
set by tests/integration/meson.build (MALLEOD, MALLEO)."""
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import msgpack
import zmq

import testkit
from testkit import TIME_SCALE

MALLEOD = os.environ.get("MALLEOD", "malleod")
MALLEO = os.environ.get("MALLEO", "malleo")

HEADER = struct.Struct(">BBBBI")
MAGIC, WIRE_VERSION = 0x6D, 1


def frames(body: dict, version=WIRE_VERSION, magic=MAGIC, json_text=False):
    payload = json.dumps(body).encode() if json_text else msgpack.packb(body)
    return [HEADER.pack(magic, version, 1 if json_text else 0, 0, 1), payload]


def envelope(type_, sender="test", id_=1, **fields):
    return {"v": 1, "type": type_, "from": sender, "id": id_, **fields}


def read_key(path):
    """The key of a key file of `malleo keygen` (its one line that is not a comment), as bytes."""
    with open(path) as f:
        return next(line.strip() for line in f if line.strip() and not line.startswith("#")).encode()


class Agent:
    def __init__(self, cluster, name, config, seeds):
        self.name = name
        self.run_dir = os.path.join(cluster.dir, name)
        os.makedirs(self.run_dir, exist_ok=True)
        config = json.loads(json.dumps(config))
        config.setdefault("agent", {}).update(
            {"id": name, "listen": "tcp://127.0.0.1:*", "run_dir": self.run_dir,
             "peers": [cluster.seed_name(s) for s in seeds]})
        # Authenticated as a deployment is (docs/deployment.md): this node's key, every node's .pub of the cluster
        # allowed in; a test about plain TCP says so with its own `security` table.
        if "security" not in config:
            config["security"] = ({"plain": True} if cluster.plain else
                                  {"secret_key": cluster.key_file(name), "allowed_keys": cluster.keys_dir})
        self.config_path = os.path.join(self.run_dir, "config.json")
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.log = open(os.path.join(self.run_dir, "malleod.log"), "w")
        nofile = cluster.nofile_limit
        self.proc = subprocess.Popen([MALLEOD, "--config", self.config_path],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=(lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile)))
                                     if nofile else None)
        self.info = self._wait_info()
        self.endpoint = self.info["endpoint"]
        self.local = self.info["local"]

    def _wait_info(self, timeout=10.0):
        path = os.path.join(self.run_dir, "agent.json")
        deadline = time.monotonic() + timeout * TIME_SCALE
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: "
                                   + open(os.path.join(self.run_dir, "malleod.log")).read())
            try:
                with open(path) as f:
                    info = json.load(f)
                # A restarted agent's directory still holds its predecessor's agent.json until it writes its own.
                if info.get("pid") == self.proc.pid:
                    return info
            except (FileNotFoundError, json.JSONDecodeError):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"{self.name} wrote no agent.json within {timeout * TIME_SCALE:g} s")

    def request(self, type_, timeout=2.0):
        return local_request(self.local, envelope(type_, "test"), timeout)

    def status(self):
        return self.request("status")

    def counters(self):
        return self.status()["counters"]

    def counter(self, name):
        """One of its counters, 0 before it first counts."""
        return self.counters().get(name, 0)

    def cli(self, *args, timeout=10):
        return subprocess.run([MALLEO, "--agent", self.local, *args], capture_output=True,
                              text=True, timeout=timeout * TIME_SCALE)

    def peers_via_cli(self, in_view_only=False):
        r = self.cli("peers", "--json")
        if r.returncode != 0:
            raise RuntimeError(f"malleo peers failed for {self.name}: {r.stderr}")
        return {p["id"] for p in json.loads(r.stdout)["peers"]
                if p["in_view"] or not in_view_only}

    def events(self, type_=None):
        """The events of its run directory's log (those of every agent that ran there), of one type or all."""
        return testkit.events(self.run_dir, type_)

    def alive(self):
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout * TIME_SCALE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


class Cluster:
    """A set of agents in one temporary directory; stopped on exit."""

    def __init__(self, plain=False):
        """plain: every agent on TCP without CURVE (security.plain), for tests of what an unauthenticated inbox
        survives; otherwise each agent gets a key pair in <dir>/keys and lets in the cluster's nodes."""
        self.dir = tempfile.mkdtemp(prefix="malleo-it-")
        self.agents = {}
        self.plain = plain
        self.keys_dir = os.path.join(self.dir, "keys")
        # RLIMIT_NOFILE, soft and hard, of the agents started from now on; None: this process's.
        self.nofile_limit = None

    def key_file(self, name):
        """<keys>/<name>.key, made by `malleo keygen` the first time a node of that name starts."""
        path = os.path.join(self.keys_dir, name + ".key")
        if not os.path.exists(path):
            subprocess.run([MALLEO, "keygen", "--dir", self.keys_dir, name], check=True, capture_output=True)
        return path

    def as_node(self, socket, node, server):
        """Makes socket (before it connects) a CURVE client with node's key pair, to the agent named server: what
        it sends then comes from node. Nothing on a plain cluster."""
        if self.plain:
            return socket
        secret = read_key(self.key_file(node))
        socket.curve_secretkey = secret
        socket.curve_publickey = zmq.curve_public(secret)
        socket.curve_serverkey = read_key(os.path.join(self.keys_dir, server + ".pub"))
        return socket

    def seed_name(self, seed):
        """A seed given as an agent's endpoint, written NODE@ENDPOINT: with CURVE the seed's key is its node's."""
        for agent in self.agents.values():
            if seed == agent.endpoint:
                return f"{agent.name}@{seed}"
        return seed

    def add(self, name, config=None, seeds=()):
        agent = Agent(self, name, config or {}, list(seeds))
        agent.started_with = (config or {}, list(seeds))
        self.agents[name] = agent
        return agent

    def restart(self, name):
        """Kills the agent (SIGKILL: nothing of its own cleanup runs) and starts a new one in its run directory, with
        the same configuration; the local endpoint is the same path, the TCP ports new."""
        old = self.agents[name]
        old.stop(signal.SIGKILL)
        return self.add(name, *old.started_with)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for a in self.agents.values():
            a.stop()
        if exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"agents' logs kept in {self.dir}", file=sys.stderr)


_ctx = zmq.Context.instance()


def local_request(endpoint, body, timeout=2.0, raw=None):
    """Sends one message (or raw frames) to a ROUTER and returns the decoded reply."""
    s = _ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.connect(endpoint)
    try:
        s.send_multipart(raw if raw is not None else frames(body))
        if not s.poll(int(timeout * TIME_SCALE * 1000)):
            raise TimeoutError(f"no reply from {endpoint}")
        header, payload = s.recv_multipart()
        magic, version, flags, _, _ = HEADER.unpack(header)
        assert magic == MAGIC and version == WIRE_VERSION
        return json.loads(payload) if flags & 1 else msgpack.unpackb(payload)
    finally:
        s.close()


def forced_split(agent, app, **result):
    """A split of `app` (rank 0 registered from this process), forced, taken by a fake coordinator that reports
    `result` (the fields of a `result` message: ok, text, ...): the agent records a command_result."""
    reply = local_request(agent.local, envelope("register", "rank", 1, app=app, rank=0, pid=os.getpid(), size=1,
                                                malleable=True))
    check(reply["type"] == "ack", f"rank 0 of {app} registers ({reply})")
    reply = local_request(agent.local, envelope("force", "test", 2, app=app, op="split", count=1))
    check(reply["type"] != "error", f"a split of {app} is queued ({reply})")
    command = local_request(agent.local, envelope("poll", "malleo-pcm", 3, app=app, iteration=1, size=1))
    check(command.get("type") == "command" and command.get("op") == "split", f"the coordinator takes it ({command})")
    reply = local_request(agent.local, envelope("result", "malleo-pcm", 4, app=app, command=command["command"],
                                                **result))
    check(reply["type"] != "error", f"its result is taken ({reply})")


_raw_senders = 0


def send_raw(endpoint, parts):
    """Sends frames to a peer inbox as a DEALER would, without waiting for anything.
    Each call is a new connection with its own routing id (a reused id would hand
    the routing over from one connection to the next and lose what is in flight)."""
    global _raw_senders
    _raw_senders += 1
    identity = b"raw-%d" % _raw_senders
    s = _ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 1000)
    s.setsockopt(zmq.IDENTITY, identity)
    s.connect(endpoint)
    s.send_multipart(parts)
    s.close()


def cluster_cli(cluster_dir, *args, timeout=30, env=None):
    """`malleo --cluster-dir CLUSTER_DIR ARGS` (a virtual cluster's command: `cluster up`, `--node N run`, ...)."""
    return subprocess.run([MALLEO, "--cluster-dir", cluster_dir, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def take_down(cluster_dir):
    """`malleo cluster down`, which must succeed."""
    down = cluster_cli(cluster_dir, "cluster", "down")
    check(down.returncode == 0, f"the cluster stops ({down.stderr.strip()})")


def plain_config(directory):
    """A configuration file holding only security.plain: for a malleod started by hand on TCP in a test that is about
    something else than authentication."""
    path = os.path.join(directory, "plain-config.json")
    with open(path, "w") as f:
        json.dump({"security": {"plain": True}}, f)
    return path


def wait_for(predicate, timeout, interval=0.05):
    """Polls `predicate` until it returns a true value, for at most `timeout` s times TIME_SCALE; returns it or
    None."""
    deadline = time.monotonic() + timeout * TIME_SCALE
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


def check(condition, message):
    if not condition:
        print("FAIL: " + message, file=sys.stderr)
        sys.exit(1)
    print("ok: " + message)


def static_profile(apw, pw=1.0):
    return {"pw": pw, "apw": apw, "upw": round(1.0 - apw, 6), "cores": 1}


# heat2d under `malleo run` with agents that decide by themselves (the loop's tests and benchmark).
HOLD_DOWN = 4.0


def ios_agent_config(cpu, **ios):
    """An agent that measures CPU `cpu` alone, decides every half second with `ios`, and holds an application for
    HOLD_DOWN seconds after each of its reconfigurations. It asks for work when its CPU is at least 90 % idle: a paced
    heat2d leaves a busy node's CPU partly idle, and the scenarios want a node that runs a process to keep it."""
    return {"agent": {"decision_interval": 0.5, "profile_interval": 0.5},
            "work_stealing": {"idle_threshold": 0.9},
            "modules": {"decision": "ios"},
            "host": {"cpus": [cpu]},
            "ios": ios,
            "actions": {"hold_down": HOLD_DOWN, "drain_deadline": 60}}


def apps(agent):
    r = agent.cli("apps", "--json")
    if r.returncode != 0:
        return {}
    return {a["id"]: a for a in json.loads(r.stdout)["apps"]}


def active_here(agent, app):
    return [p["rank"] for p in apps(agent).get(app, {}).get("processes", []) if p["active"]]


def registered_app(agent, heat2d, apps_of=None,
                   what="the application registers and its bridge polls the agent"):
    """The id of heat2d's application once `agent` (what apps_of(agent), `apps` by default, asks) shows it malleable:
    its ranks have registered and its bridge has polled."""
    def registered():
        for app_id, app in (apps_of or apps)(agent).items():
            if app_id.startswith(os.path.basename(heat2d) + "-") and app["malleable"]:
                return app_id
        return None
    app = wait_for(registered, 60, 0.2)
    check(app is not None, what)
    return app


def launch(agent, mpi, ranks, heat2d, grid, env, work):
    return subprocess.Popen(
        [MALLEO, "--agent", agent.local, "run", "--mpi", mpi, *ranks, "--profile-dir", work, "--", heat2d, *grid,
         "--times"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def launch_pool(a, blocks, grid, env):
    """heat2d as one MPI job of one process per block (node, agent), in that order, each with the profiler preloaded
    and its own MALLEO_NODE and MALLEO_AGENT: world rank i runs on blocks[i]'s node and reports to its agent."""
    library = os.path.join(os.path.dirname(MALLEO), "..", "pmpi_profiler", f"libmalleo_pmpi_{a.mpi}.so")
    if a.mpi == "openmpi":
        command = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1"]
    else:
        command = ["mpiexec.mpich"]
    for i, (node, agent) in enumerate(blocks):
        if i:
            command.append(":")
        command += ["-n", "1", "env", f"LD_PRELOAD={os.path.realpath(library)}", f"MALLEO_NODE={node}",
                    f"MALLEO_AGENT={agent.local}", a.heat2d, *grid, "--times"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
