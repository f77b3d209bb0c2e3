# SPDX-License-Identifier: Apache-2.0
"""The command path end to end: `malleo force` -> the agent hosting rank 0 -> the
PCM bridge's coordinator polling it at heat2d's probe -> split / merge -> `result`
back to the agent. Real malleod, real `malleo run` in pool mode (-n 2 --max 5), real
MPI. The grid's checksum at the end must equal a static run's: the data survived
every reconfiguration, the failed one included.

With --spawn (Open MPI): spawn mode, `malleo run -n 1` without --max, so a split's
processes are started by MPI_Comm_spawn in the background while heat2d computes; the
agent's command is answered when the split happens, at a later probe; then a merge, a
migration to a second node (n2, with an agent of its own) that spawns the process
taking world rank 0's place (the coordinator until then, the only process of the
launch), and a merge that this spawned coordinator must take from the application's
root agent (n1's) under the application's id, through the agent's remote endpoint
(tcp://), as a coordinator on another host must: n1's ipc:// is on n1 alone.

usage: force_test.py --mpi openmpi|mpich [--spawn] HEAT2D"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from testkit import checksum, heat2d_args, heat2d_parser, kill, run_env
from harness import MALLEO, Cluster, check, envelope, local_request, wait_for

# The run must outlive the commands (a few seconds of them) with margin. A fixed iteration count cannot time it: MPICH
# runs hundreds of iterations per second with 2 processes but, busy-waiting, only a few with 3 or 4 on 2 cores. So
# heat2d --pace makes each iteration last at least PACE_MS: ITERATIONS * PACE_MS = 8 s on either MPI, whatever the
# process count; the commands are done after about 2 s. 20 ms leaves room for MPICH's 3 or 4 processes on 2 cores,
# whose iterations took up to about 10 ms on a loaded machine (a longer one would only make the run longer).
ITERATIONS = 400
PACE_MS = 20
RUN_TIMEOUT = 600


def apps(agent):
    r = agent.cli("apps", "--json")
    if r.returncode != 0:
        raise RuntimeError("malleo apps failed: " + r.stderr)
    return {a["id"]: a for a in json.loads(r.stdout)["apps"]}


def force(agent, *args, timeout=60):
    return agent.cli("force", *args, timeout=timeout)


def registered_app(agent, heat2d):
    """The application's id once the profiler has registered its ranks and the bridge's first poll has marked it
    malleable."""
    def registered():
        for app_id, app in apps(agent).items():
            if app_id.startswith(os.path.basename(heat2d) + "-") and app["malleable"]:
                return app_id
        return None
    app = wait_for(registered, 30)
    check(app is not None, "the application registers and its bridge polls the agent")
    return app


@contextlib.contextmanager
def paced_run(agent, a, work, grid, ranks, env):
    """heat2d under `malleo run` reporting to `agent`, paced to outlive the commands; `ranks`: -n (and --max). A run
    still going when the block ends (a failed check left it) is killed."""
    run = subprocess.Popen(
        [MALLEO, "--agent", agent.local, "run", "--mpi", a.mpi, *ranks, "--profile-dir", work, "--", a.heat2d, *grid,
         "--pace", str(PACE_MS)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        yield run
    finally:
        kill(run)


def ended(run, processes):
    """The run's output once it has ended by itself, which it must do well and with `processes` processes."""
    output, _ = run.communicate(timeout=RUN_TIMEOUT)
    check(run.returncode == 0, f"the run ends well after the commands ({run.returncode})\n{output}")
    check(f"final: {processes} processes" in output, f"the run ends with {processes} processes")
    return output


def static_checksum(a, grid, work, env):
    """heat2d's checksum on one process, unpaced and left alone (--pace only sleeps: the result is the same, which the
    comparison with a paced run asserts too)."""
    static = subprocess.run(
        [MALLEO, "--agent", "off", "run", "--mpi", a.mpi, "-n", "1", "--profile-dir", work, "--", a.heat2d, *grid],
        capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT)
    check(static.returncode == 0, f"the static run ends well\n{static.stdout}{static.stderr}")
    return checksum(static.stdout)


def active_ranks(agent, app, want):
    """Waits (reports come every second) until the agent shows exactly the ranks `want` as active, the others of the
    pool parked; returns what it showed last."""
    shown = None
    def matches():
        nonlocal shown
        shown = sorted(p["rank"] for p in apps(agent).get(app, {}).get("processes", []) if p["active"])
        return shown == want
    wait_for(matches, 5, 0.25)
    return shown


def one_line(r):
    return r.stdout == "" and len(r.stderr.strip().splitlines()) == 1


def main():
    parser = heat2d_parser()
    parser.add_argument("--spawn", action="store_true", help="spawn mode (Open MPI)")
    a = heat2d_args(parser)
    # The runs' profiles: removed when every check passed, kept (a check exits) to look at when one failed.
    work = tempfile.mkdtemp(prefix="malleo-force-")
    status = spawn_mode(a, work) if a.spawn else pool_mode(a, work)
    shutil.rmtree(work, ignore_errors=True)
    return status


def pool_mode(a, work):
    env = run_env(a.mpi)
    grid = ["--rows", "512", "--columns", "512", "--iterations", str(ITERATIONS)]
    with Cluster() as cluster:
        agent = cluster.add("n1")
        started = time.monotonic()
        def elapsed():
            return time.monotonic() - started
        with paced_run(agent, a, work, grid, ["-n", "2", "--max", "5"], env) as run:
            app = registered_app(agent, a.heat2d)
            check(apps(agent)[app]["size"] == 2, "the agent knows 2 active processes")
            shown = active_ranks(agent, app, [0, 1])
            check(shown == [0, 1], f"apps shows ranks 0 and 1 active, the 3 parked ones not ({shown})")

            r = force(agent, app, "split", "2", "--wait", "30")
            check(r.returncode == 0 and "ok" in r.stdout and "2 -> 4 processes" in r.stdout,
                  f"force split 2 --wait: ok, 2 -> 4 ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
            # 256 columns each before, 128 after, the slots world ranks 0, 2, 1, 3 (each joiner after the process
            # whose block it shares): 256 columns of 512 doubles move (0 and 1 keep their first 128).
            check(re.search(r"\(\d+\.\d+ s, 1\.0 MiB moved\)", r.stdout) is not None,
                  f"the outcome line says 1.0 MiB moved ({r.stdout.strip()})")
            check(apps(agent)[app]["size"] == 4, "after the split the agent knows 4 active processes")
            shown = active_ranks(agent, app, [0, 1, 2, 3])
            check(shown == [0, 1, 2, 3], f"after the split apps shows ranks 0 to 3 active ({shown})")

            # Two forces back to back: the second meets the first queued or in flight (a poll is at most every
            # 0.2 s, and the merge then takes milliseconds, while these two requests are microseconds apart).
            first = local_request(agent.local, envelope("force", "test", 1, app=app, op="merge", count=1))
            second = local_request(agent.local, envelope("force", "test", 2, app=app, op="split", count=1))
            check(first.get("type") == "force_reply" and first.get("command", 0) > 0,
                  f"force merge 1 is queued ({first})")
            check(second.get("type") == "error" and second.get("code") == "busy",
                  f"a second force while one is pending is refused busy ({second.get('text')})")

            def merge_result():
                result = apps(agent)[app]["last_result"]
                return result if result and result["command"] == first["command"] else None
            result = wait_for(merge_result, 30)
            check(result is not None and result["ok"] and result["before"] == 4 and result["after"] == 3,
                  f"the merge's result reaches the agent: ok, 4 -> 3 ({result})")
            # 512 columns of 512 doubles: 128 per slot before (world ranks 0, 2, 1, 3), 171, 171, 170 after, the
            # last slot leaving (the C API keeps the ranks of those that stay): 0 receives columns 128-170 from 2,
            # 2 receives 256-341 from 1, 1 receives 384-511 from 3; the rest stays with its process.
            check(result is not None and result.get("bytes") == (43 + 86 + 128) * 512 * 8,
                  f"the result says how many bytes moved between processes: {(43 + 86 + 128) * 512 * 8} "
                  f"({result and result.get('bytes')})")
            shown = active_ranks(agent, app, [0, 1, 2])
            check(shown == [0, 1, 2], f"after the merge apps shows rank 3 parked again ({shown})")

            # merge put world rank 3 in state left (the C API cannot take a leaver back): one spare remains.
            r = force(agent, app, "split", "2", "--wait", "30")
            check(r.returncode == 1 and "failed" in r.stdout and "continuing with 3 processes" in r.stdout,
                  f"a split the pool cannot satisfy: result failed, exit 1 ({r.stdout.strip()})")
            last = apps(agent)[app]["last_result"]
            check(last and not last["ok"] and last["after"] == 3, "apps shows the failed result")
            check(apps(agent)[app]["command"] is None, "the slot is free again")

            for args, what in [((app, "grow", "1"), "op grow"), ((app, "split", "0"), "count 0"),
                               (("nosuch-1", "split", "1"), "an unknown app"),
                               ((app, "merge", "1", "--node", "n1"), "a merge with a node")]:
                r = force(agent, *args)
                check(r.returncode == 2 and one_line(r), f"force with {what}: exit 2, one line ({r.stderr.strip()})")
            bad = local_request(agent.local, envelope("force", "test", 3, app=app, op="grow", count=1))
            check(bad.get("code") == "bad_field" and "split, merge or migrate" in bad.get("text", ""),
                  f"the agent refuses op grow itself ({bad.get('text')})")
            check(agent.status()["type"] == "status_reply", "the agent still answers status")

            counters = agent.counters()
            check(counters.get("commands.ok") == 2 and counters.get("commands.failed") == 1 and
                  counters.get("commands.sent") == 3 and counters.get("commands.refused.busy") == 1,
                  "counters: 3 commands sent, 2 ok, 1 failed, 1 refused busy")
            check(run.poll() is None, f"the run outlives the commands (still running after {elapsed():.1f} s of "
                  f"its {ITERATIONS * PACE_MS / 1000:.0f} s paced)")
            output = ended(run, 3)
        # The application was still running when the last command was answered: it outlived them.
        check(wait_for(lambda: app not in apps(agent), 10), "the application deregisters at its end")

    got, want = checksum(output), static_checksum(a, grid, work, env)
    check(got is not None and got == want, f"checksum after split, merge and a failed split {got} == static {want}")
    return 0


def spawn_mode(a, work):
    env = run_env(a.mpi)
    # Four commands, two of them spawning: 50 % more paced iterations than the pool mode's three.
    grid = ["--rows", "512", "--columns", "512", "--iterations", str(ITERATIONS * 3 // 2)]
    with Cluster() as cluster:
        agent = cluster.add("n1")
        other = cluster.add("n2")
        cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
        nodes = dict(MALLEO_NODE="n1", MALLEO_NODES=f"n1={cpus};n2={cpus}",
                     MALLEO_NODE_AGENTS=f"n1={agent.local};n2={other.local}")
        check(agent.info.get("app_remote", "").startswith("tcp://"),
              f"the agent names its remote endpoint in agent.json ({agent.info.get('app_remote')})")
        with paced_run(agent, a, work, grid, ["-n", "1"], dict(env, MALLEO_PCM_VERBOSE="1", **nodes)) as run:
            app = registered_app(agent, a.heat2d)
            r = force(agent, app, "split", "2", "--wait", "60", timeout=90)
            check(r.returncode == 0 and "ok" in r.stdout and "1 -> 3 processes" in r.stdout,
                  f"force split 2 in spawn mode --wait: ok, 1 -> 3 ({r.returncode}: {r.stdout.strip()} "
                  f"{r.stderr.strip()})")
            split_result = apps(agent)[app]["last_result"]
            check(split_result and split_result["ok"], f"apps shows the split's result ({split_result})")
            r = force(agent, app, "merge", "1", "--wait", "60", timeout=90)
            check(r.returncode == 0 and "ok" in r.stdout and "3 -> 2 processes" in r.stdout,
                  f"force merge 1: ok, 3 -> 2 ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
            check(agent.counters().get("rx.remote.poll", 0) == 0,
                  "coordinators on the root agent's node poll its local endpoint")
            # No spare (the C API's leaver stays out): the migration spawns one process on n2, which takes the place
            # of the first active process off n2, world rank 0; from then on a process of another MPI job on
            # another node coordinates.
            r = force(agent, app, "migrate", "1", "--node", "n2", "--wait", "60", timeout=90)
            check(r.returncode == 0 and "ok" in r.stdout and "2 -> 2 processes" in r.stdout,
                  f"force migrate 1 --node n2: ok, 2 -> 2 ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
            r = force(agent, app, "merge", "1", "--wait", "60", timeout=90)
            check(r.returncode == 0 and "ok" in r.stdout and "2 -> 1 processes" in r.stdout,
                  f"force merge 1 after world rank 0 migrated: the spawned coordinator takes it, ok, 2 -> 1 "
                  f"({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
            counters = agent.counters()
            check(counters.get("commands.ok") == 4 and counters.get("commands.sent") == 4,
                  f"counters: 4 commands sent, 4 ok ({counters.get('commands.sent')}, {counters.get('commands.ok')})")
            check(counters.get("rx.remote.poll", 0) >= 1 and counters.get("rx.remote.result") == 1,
                  f"the coordinator on n2 polled n1's agent on its remote endpoint and sent the merge's result there "
                  f"(polls {counters.get('rx.remote.poll')}, results {counters.get('rx.remote.result')})")
            migrated = [p for reg in apps(other).values() for p in reg["processes"]]
            check(len(migrated) == 1, f"the process spawned on n2 reports to n2's agent ({migrated})")
            check(run.poll() is None, "the run outlives the commands")
            output = ended(run, 1)
        background = re.findall(r"split at iteration (\d+) took .* \(processes started in the background: "
                                r"[0-9.]+ s over (\d+) probes", output)
        check(len(background) == 1 and int(background[0][1]) >= 1 and
              int(background[0][0]) == split_result["iteration"],
              f"the split's processes started in the background while heat2d went on ({background}), and the "
              f"agent's result names the probe where the split happened ({split_result['iteration']})")
    got, want = checksum(output), static_checksum(a, grid, work, env)
    check(got is not None and got == want,
          f"checksum after a split by spawning, a merge, a migration by spawning and a merge {got} == static {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
