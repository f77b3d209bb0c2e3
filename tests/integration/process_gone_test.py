# SPDX-License-Identifier: Apache-2.0
"""An application whose processes are killed (SIGKILL: no MPI_Finalize, no deregister) is forgotten by its agent:
real malleod, real `malleo run`, real MPI. Before, the agent kept showing the dead processes as active forever, and
a drain of its node waited for them until its deadline (60 s).

The agent must, within a few profile intervals: say `process_gone` for each killed rank and `app_gone` once, count
them, list no application, and then leave at once when asked to drain (SIGTERM), with no processes left to move.

usage: process_gone_test.py --mpi openmpi|mpich HEAT2D"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import MALLEO, Cluster, check, wait_for
from testkit import heat2d_args, kill, run_env
from force_test import apps


def main():
    a = heat2d_args()
    work = tempfile.mkdtemp(prefix="malleo-gone-")
    with Cluster() as cluster, open(os.path.join(work, "run.txt"), "w") as out:
        # The default drain deadline (60 s): what a drain would wait for processes it still believes in.
        n1 = cluster.add("n1", {"agent": {"profile_interval": 0.5}})
        run = subprocess.Popen(
            [MALLEO, "--agent", n1.local, "run", "--mpi", a.mpi, "-n", "3", "--profile-dir", work, "--",
             a.heat2d, "--iterations", "100000", "--pace", "20"],
            stdout=out, stderr=subprocess.STDOUT, env=run_env(a.mpi))
        try:
            def three_ranks():
                for app_id, app in apps(n1).items():
                    if app["malleable"] and len(app["processes"]) == 3:
                        return app_id, [p["pid"] for p in app["processes"]]
                return None
            found = wait_for(three_ranks, 30, 0.2)
            check(found is not None, "heat2d's 3 ranks register with n1 and its coordinator polls")
            app, pids = found
            # Let a profile sample see them alive, as it would any process running longer than an interval.
            check(wait_for(lambda: n1.counters().get("apps.reports", 0) >= 6, 10, 0.1),
                  "their reports reach n1")
            for pid in pids:
                os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            check(wait_for(lambda: not apps(n1), 10, 0.1),
                  f"n1 forgets the killed application ({time.monotonic() - killed:.1f} s after the kill)")
            gone = n1.events("process_gone")
            check(sorted(e["pid"] for e in gone) == sorted(pids) and all(e["app"] == app for e in gone),
                  f"one process_gone per killed rank, with its pid ({gone})")
            check(len([e for e in n1.events("app_gone") if e["app"] == app]) == 1, "and app_gone once")
            check(n1.counters().get("apps.processes_gone") == 3, "counted: apps.processes_gone = 3")
            run.wait(timeout=30)
            check(run.returncode != 0, f"malleo run reports the killed launch ({run.returncode})")
            asked = time.monotonic()
            n1.proc.send_signal(signal.SIGTERM)
            n1.proc.wait(timeout=15)
            took = time.monotonic() - asked
            check(took < 5, f"a drain then has nothing to wait for: n1 leaves in {took:.1f} s, not at its 60 s deadline")
        finally:
            kill(run)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
