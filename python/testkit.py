# SPDX-License-Identifier: Apache-2.0
"""What the Python tests (tests/) and benchmarks (bench/) share, written once: the skip rule, the MPI launchers and
their command line, the preamble of a test on heat2d, heat2d's checksums, an agent's event log, and the benchmarks'
summaries. Standard library only, so that any python3 imports it; the agents' harness (harness.py, beside it) needs
python3-zmq and python3-msgpack. A script finds this folder by PYTHONPATH (the tests' meson.build sets it) or by
putting it on sys.path itself (the benchmarks, pcm_launch.py, pmpi_launch.py)."""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

# The exit status by which a script tells `meson test` it was skipped: it could not run here, which is no failure.
SKIP = 77
# How much slower than usual the programs under test run: 5 in the sanitizer build's `asan` test setup
# (tests/meson.build), 1 otherwise. Every wait for something to happen is stretched by it, never a bound that a test
# asserts (a test that measures a latency scales its bound itself, saying so).
TIME_SCALE = float(os.environ.get("MALLEO_TEST_TIME_SCALE", "1"))
# Each MPI's launcher, by the name Debian gives it.
LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpiexec.mpich"}


def skip(why):
    """Ends the script as skipped, with one line saying why."""
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP)


def launcher(mpi):
    """The path of `mpi`'s launcher; the script is skipped where it is not installed."""
    path = shutil.which(LAUNCHERS[mpi])
    if not path:
        skip(f"{LAUNCHERS[mpi]} is not installed")
    return path


def launcher_command(mpi, ranks, env_for_ranks, program, options=()):
    """The command that runs `program` (a list) on `ranks` ranks with `env_for_ranks` in the ranks' environment only.
    Open MPI: oversubscribed, unbound (more ranks than the 2 cores); `options` are Open MPI's own (--mca ...)."""
    if mpi == "openmpi":
        cmd = [launcher(mpi), "--oversubscribe", "--bind-to", "none", "-n", str(ranks), *options]
        for key, value in env_for_ranks.items():
            cmd += ["-x", f"{key}={value}"]
    else:
        cmd = [launcher(mpi), "-n", str(ranks)]
        for key, value in env_for_ranks.items():
            cmd += ["-genv", key, str(value)]
    return cmd + list(program)


def launcher_env(yield_when_idle=True, drop=()):
    """This process's environment for a launcher: Open MPI allowed to run as root and to oversubscribe, the
    variables named in `drop` and those starting with one of them ending in '_' taken out. yield_when_idle: ranks
    waiting in MPI yield instead of spinning through their time slice (more ranks than the 2 shared cores)."""
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not any(d.endswith("_") and k.startswith(d) for d in drop)}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    if yield_when_idle:
        env["OMPI_MCA_mpi_yield_when_idle"] = "1"
    return env


def profiled_launcher_env(yield_when_idle):
    """launcher_env for a launcher whose ranks are profiled: the launcher itself is not (no LD_PRELOAD).
    yield_when_idle: on 2 shared cores a busy-polling rank can hold the CPU its peer needs for a whole time slice:
    latency-bound phases (hpcc's ping-pongs) then took 20-50 s instead of 2 s. Yielding keeps the tests short."""
    return launcher_env(yield_when_idle, drop=("LD_PRELOAD",))


def run_profiled(mpi, ranks, program, preload=None, profile_dir=None, mode="full", timeout=50,
                 yield_when_idle=True):
    """Runs program (a list) on `ranks` ranks, with libmalleo_pmpi `preload` (if given) preloaded into the ranks only,
    in MALLEO_PROFILE `mode`, its reports to `profile_dir`; returns the CompletedProcess."""
    env_for_ranks = {}
    program = list(program)
    if os.path.exists(program[0]):
        program[0] = os.path.abspath(program[0])  # meson passes build-relative paths
    if preload:
        env_for_ranks = {"LD_PRELOAD": os.path.abspath(preload), "MALLEO_PROFILE": mode,
                         "MALLEO_PROFILE_DIR": profile_dir or "."}
    cmd = launcher_command(mpi, ranks, env_for_ranks, program)
    return subprocess.run(cmd, env=profiled_launcher_env(yield_when_idle), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)


def run_env(mpi, extra=None, poll_interval=None):
    """The environment of a `malleo run` of `mpi`: Open MPI allowed to run as root, `extra` added, and the bridge's
    MALLEO_POLL_INTERVAL set to `poll_interval` unless already set."""
    env = dict(os.environ)
    if mpi == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra or {})
    if poll_interval:
        env.setdefault("MALLEO_POLL_INTERVAL", poll_interval)
    return env


def heat2d_parser(description=None):
    """The command line of a test on heat2d under one MPI: --mpi; the caller adds its own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mpi", required=True, choices=sorted(LAUNCHERS))
    return parser


def heat2d_args(parser=None):
    """heat2d_parser's (or `parser`'s) options and heat2d's path, parsed; the test is skipped where heat2d was not
    built for that MPI."""
    parser = parser or heat2d_parser()
    parser.add_argument("heat2d")
    args = parser.parse_args()
    if not os.path.exists(args.heat2d):
        skip(f"{args.heat2d} not built")
    return args


def checksum(output):
    """heat2d's (or astro's C++ twin's) last `checksum HEX` line in `output`, or None."""
    found = re.findall(r"^checksum ([0-9a-f]+)$", output, re.M)
    return found[-1] if found else None


def sole_checksum(output):
    """The 16 hex digits of the one `checksum` line in `output`; None if there is none or more than one."""
    found = re.findall(r"^checksum ([0-9a-f]{16})$", output, re.M)
    return found[0] if len(found) == 1 else None


class Problems(list):
    """What a check of many parts found wrong, a line each: check(ok, what) keeps `what` where ok is false."""

    def check(self, ok, what):
        if not ok:
            self.append(what)


def verdict(problems, failure, success):
    """Ends a check of many parts: each of `problems` on stderr and `FAIL: failure` (exit 1) if there are any, else
    `ok: success`."""
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(f"FAIL: {failure}")
    print(f"ok: {success}")


def describe(proc):
    """A finished process's status and output, for a failure message."""
    return f"rc {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def events(run_dir, type_=None):
    """The events of `run_dir`'s events.jsonl (of every agent that ran there), of one type or all; a line still being
    written is passed over."""
    found = []
    try:
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            for line in f:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if type_ is None or event.get("type") == type_:
                    found.append(event)
    except FileNotFoundError:
        pass
    return found


def start_plain_agent(malleod, run_dir):
    """A malleod on `run_dir` with the static profiling module, its local endpoint ipc://RUN_DIR/agent.sock, once it
    has written agent.json; the script fails where it does not start within 10 s. Only the local endpoint is used: no
    peer will talk to the TCP inbox, so no keys for it (security.plain)."""
    config = os.path.join(run_dir, "config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump({"modules": {"profiling": "static"}, "security": {"plain": True}}, f)
    log = open(os.path.join(run_dir, "malleod.log"), "w", encoding="utf-8")
    proc = subprocess.Popen([malleod, "--config", config, "--listen", "tcp://127.0.0.1:*", "--run-dir", run_dir],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"FAIL: malleod exited with {proc.returncode}: {open(log.name, encoding='utf-8').read()}")
        if os.path.exists(os.path.join(run_dir, "agent.json")):
            return proc
        time.sleep(0.05)
    proc.kill()
    sys.exit("FAIL: malleod wrote no agent.json within 10 s")


def apps_at(malleo, endpoint):
    """`malleo apps --json` of the agent at `endpoint`: its applications, none where it does not answer."""
    r = subprocess.run([malleo, "--agent", endpoint, "apps", "--json"], capture_output=True, text=True, timeout=10)
    return json.loads(r.stdout)["apps"] if r.returncode == 0 else []


def walled_events(run_dir):
    """The events of `run_dir`'s events.jsonl, each with `wall` = its log's log_started wall + t: on time.time()'s
    clock (a benchmark's), those before any log_started left out."""
    found, wall0 = [], None
    for e in events(run_dir):
        if e.get("type") == "log_started":
            wall0 = e["wall"] - e.get("t", 0.0)
        elif wall0 is not None and isinstance(e.get("t"), (int, float)):
            e["wall"] = wall0 + e["t"]
            found.append(e)
    return found


def first_event(events_, type_, **match):
    """The first of `events_` of that type whose fields equal `match`, or None."""
    return next((e for e in events_ if e.get("type") == type_ and all(e.get(k) == v for k, v in match.items())),
                None)


def summary(values, digits=3):
    """A benchmark's figure: median [min–max] (N=count)."""
    if not values:
        return "no rounds"
    f = f"{{:.{digits}f}}"
    return (f"{f.format(statistics.median(values))} [{f.format(min(values))}–{f.format(max(values))}] "
            f"(N={len(values)})")


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def stop(proc, timeout=30):
    """SIGTERM (`malleo run` passes it on to its launcher), SIGKILL only if that does not end it within `timeout` s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill(proc):
    """SIGKILL to a process still running (one a failed check left behind), and its end awaited."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


class Lines:
    """A process's stdout read line by line on a thread, each line stamped on arrival with `clock()` (heat2d's rank 0
    writes to Open MPI's pty: one line at a time)."""

    def __init__(self, proc, clock=time.monotonic):
        self.proc = proc
        self.clock = clock
        self.lines = []
        self.ended = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                self.lines.append((self.clock(), line.rstrip("\n")))
                self.cond.notify_all()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def first(self, predicate, timeout):
        """(arrival, line, what predicate returned) of the first line the predicate holds for, or None once the
        output has ended or `timeout` s have passed."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self.cond:
            while True:
                for at, line in self.lines[seen:]:
                    m = predicate(line)
                    if m:
                        return at, line, m
                seen = len(self.lines)
                left = deadline - time.monotonic()
                if left <= 0 or self.ended:
                    return None
                self.cond.wait(min(left, 0.2))

    def wait(self, predicate, timeout):
        """The arrival of the first line the predicate holds for, or None (as `first`)."""
        hit = self.first(predicate, timeout)
        return hit[0] if hit else None

    def text(self):
        with self.cond:
            return "\n".join(line for _, line in self.lines)
