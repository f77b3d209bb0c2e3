# SPDX-License-Identifier: Apache-2.0
"""malleo under a real Slurm on this machine: the fixture starts munged, slurmctld and one slurmd per node (Debian's
Slurm is built for several slurmd on one host, each a Slurm node on its own port), always stopped at the end by
their recorded pids. Inside one allocation of two nodes:

  - the agents are one job step, `srun --ntasks-per-node=1 --overlap malleod ...`, each taking Slurm's name for its
    node as its id (SLURMD_NODENAME; the per-node configuration file is chosen by that name too, since both Slurm
    nodes share this host's file system and addresses);
  - heat2d (pool mode) is launched by `malleo run -n 1 --max 2` in the same allocation, Open MPI's under mpirun and
    under `srun --mpi=pmix` (`--launcher srun`), MPICH's under `srun --mpi=pmi2`: malleo run reads the
    allocation's nodes and puts the active rank on n1, the spare on n2, each reporting to its node's agent
    (`--agent 'ipc://.../%n/agent.sock'`), mpirun starting its daemons on the nodes through srun;
  - n2's agent, idle, asks for work; n1's decision (ios) splits the application onto n2 by itself (no `malleo force`,
    no MALLEO_FORCE): the spare on n2 becomes active, and it is a process Slurm started on n2 (its SLURMD_NODENAME);
  - the checksum equals a static run's.

Skips with one line where Slurm cannot start: not root, or Slurm's or munge's programs missing (scripts/setup.sh
installs slurm-wlm and munge).

usage: slurm_test.py HEAT2D_OPENMPI [HEAT2D_MPICH]"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from testkit import checksum, events, skip
from harness import MALLEO, MALLEOD, TIME_SCALE, check, static_profile, wait_for

NODES = 2
CPUS = 2
RUN_TIMEOUT = 300 * TIME_SCALE
PROGRAMS = ["munged", "mungekey", "slurmctld", "slurmd", "srun", "salloc", "sinfo", "scontrol"]


def free_port_range(count):
    """A base port with `count` free ports above it (slurmctld on the base, the slurmds at base + 11 ...)."""
    for base in range(21000, 40000, 97):
        sockets = []
        try:
            for port in [base] + [base + 11 + i for i in range(count)]:
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", port))
                sockets.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free port range for Slurm")


class SlurmCluster:
    """munged, slurmctld and NODES slurmd (n1, n2, ...) under one directory, each stopped by its pid."""

    def __init__(self, directory):
        self.dir = directory
        self.pids = []  # in start order; stopped in reverse: slurmd, slurmctld, munged
        self.env = dict(os.environ, SLURM_CONF=os.path.join(directory, "slurm.conf"))

    def _start(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "w")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)
        self.pids.append((name, proc))
        return proc

    def start(self):
        d = self.dir
        for sub in ("munge", "ctld", "log", "run"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        os.chmod(d, 0o755)
        os.chmod(os.path.join(d, "munge"), 0o755)  # munged refuses a socket directory others may write
        key = os.path.join(d, "munge", "munge.key")
        subprocess.run(["mungekey", "-c", "-k", key], check=True, capture_output=True)
        os.chmod(key, 0o600)
        sock = os.path.join(d, "munge", "munge.sock")
        self._start("munged", ["munged", "-F", "-S", sock, f"--key-file={key}",
                               f"--pid-file={d}/munge/munged.pid", f"--seed-file={d}/munge/munged.seed",
                               f"--log-file={d}/log/munged.log"])
        check(wait_for(lambda: os.path.exists(sock), 10), "munged is up")
        port = free_port_range(NODES)
        host = socket.gethostname().split(".")[0]
        with open(self.env["SLURM_CONF"], "w") as f:
            f.write(f"""ClusterName=malleotest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={d}/ctld
SlurmdSpoolDir={d}/spool/%n
TmpFS={d}/tmp/%n
SlurmctldPidFile={d}/run/slurmctld.pidf
SlurmdPidFile={d}/run/slurmd-%n.pidf
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=30
KillWait=5
NodeName=n[1-{NODES}] NodeHostname={host} NodeAddr=127.0.0.1 Port=[{port + 11}-{port + 10 + NODES}] CPUs={CPUS} RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
        self._start("slurmctld", ["slurmctld", "-D", "-i", "-f", self.env["SLURM_CONF"]])
        for i in range(1, NODES + 1):
            os.makedirs(os.path.join(d, "spool", f"n{i}"), exist_ok=True)
            os.makedirs(os.path.join(d, "tmp", f"n{i}"), exist_ok=True)
            self._start(f"slurmd-n{i}", ["slurmd", "-D", "-N", f"n{i}", "-f", self.env["SLURM_CONF"]])

        def idle():
            # sinfo hangs while slurmctld is not up: always under a timeout.
            r = subprocess.run(["timeout", "5", "sinfo", "-h", "-N", "-t", "idle", "-o", "%N"], env=self.env,
                               capture_output=True, text=True)
            return len(set(r.stdout.split())) == NODES
        up = wait_for(idle, 60, 0.2)
        if not up:
            for name in ("slurmctld.out", "slurmctld.log"):
                path = os.path.join(d, "log", name)
                if os.path.exists(path):
                    print(f"--- {name}\n" + open(path).read()[-2000:], file=sys.stderr)
        check(up, f"Slurm is up: {NODES} nodes idle")

    def stop(self):
        subprocess.run(["timeout", "10", "scancel", "--user=root"], env=self.env, capture_output=True)
        for name, proc in reversed(self.pids):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def skip_reason():
    if os.geteuid() != 0:
        return "Slurm's daemons need root here (slurmd runs jobs as any user)"
    missing = [p for p in PROGRAMS if not shutil.which(p)]
    if missing:
        return f"Slurm cannot start: {', '.join(missing)} not installed (scripts/setup.sh installs slurm-wlm munge)"
    return None


def apps(local):
    r = subprocess.run([MALLEO, "--agent", local, "apps", "--json"], capture_output=True, text=True,
                       timeout=20 * TIME_SCALE)
    return json.loads(r.stdout)["apps"] if r.returncode == 0 else []


# Busy: an iteration computes for longer than its pace (about 3 ms on this machine), so n1's CPU is taken and ios's
# power ratio asks for an even split of the one process (rho 0.5); a mostly sleeping heat2d would leave n1 looking
# idle, and ios would rather move its one process whole (a migration). The pace only bounds the run's speed.
GRID = ["--rows", "1024", "--columns", "2048", "--iterations", "2500", "--pace", "2"]


def one_run(launcher, heat2d, work, env, pattern, local, nodes, agents_dir, static_checksum, runs):
    """heat2d by `malleo run --launcher LAUNCHER -n 1 --max 2` in the allocation: placed, split onto n2 by the agents'
    decision, ended with the static run's checksum."""
    started = time.monotonic()
    run = subprocess.Popen([MALLEO, "--agent", pattern, "run", "--launcher", launcher, "-n", "1", "--max", "2",
                            "--profile-dir", work, "--", heat2d, *GRID], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env)
    runs[-1] = run

    def mine():
        """This run's application: the one registered at n1 that no earlier run had."""
        seen = {e["app"] for e in events(os.path.join(agents_dir, "n1"), "app_gone")}
        found = [a for a in apps(local["n1"]) if a["id"] not in seen]
        return found[0]["id"] if found else None
    app = wait_for(mine, 60, 0.2)
    check(app, f"{launcher}: {os.path.basename(heat2d)} registers with n1's agent")

    def placed():
        # A process registers active and says it parked in its next report: wait for the states to settle.
        here = {n: [p["active"] for a in apps(local[n]) if a["id"] == app for p in a["processes"]] for n in nodes}
        return here if here["n1"] == [True] and here["n2"] == [False] else None
    where = wait_for(placed, 60, 0.2)
    check(where,
          f"{launcher}: malleo run put the active rank on n1 and the parked spare on n2, each registered with its "
          f"node's agent ({where})")

    def split():
        return [e for e in events(os.path.join(agents_dir, "n1"), "reconf_result") if e.get("ok") and e["app"] == app]
    results = wait_for(split, 120, 0.2) or []
    check(results and results[0]["op"] == "split" and results[0].get("node") == "n2" and
          results[0]["trigger"] == "wrm" and results[0]["decision"] == "ios",
          f"{launcher}: n1's decision on n2's work request split the application onto n2 ({results[:1]})")
    active = wait_for(lambda: [p for a in apps(local["n2"]) if a["id"] == app for p in a["processes"]
                               if p["active"]], 30, 0.2)
    check(active, f"{launcher}: a process of the application is active on n2 ({active})")
    with open(f"/proc/{active[0]['pid']}/environ", "rb") as f:
        environ = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
    check(environ.get(b"SLURMD_NODENAME") == b"n2",
          f"{launcher}: that process was started by Slurm on n2 (SLURMD_NODENAME={environ.get(b'SLURMD_NODENAME')})")
    output, _ = run.communicate(timeout=RUN_TIMEOUT)
    check(run.returncode == 0, f"{launcher}: the run ends well ({run.returncode})\n{output[-3000:]}")
    print(f"{launcher}: heat2d under Slurm took {time.monotonic() - started:.1f} s")
    forced = [e for n in nodes for e in events(os.path.join(agents_dir, n), "reconf_result")
              if e.get("trigger") == "force"]
    check(not forced, f"{launcher}: no reconfiguration was forced")
    got = checksum(output)
    check(got is not None and got == static_checksum,
          f"{launcher}: checksum after the split {got} == static {static_checksum}")


def inside(heat2d, work):
    """Runs inside the allocation (salloc's command): agents by srun, heat2d by malleo run, the split, the checks."""
    nodes = subprocess.run(["scontrol", "show", "hostnames"], capture_output=True, text=True).stdout.split()
    check(nodes == [f"n{i}" for i in range(1, NODES + 1)], f"the allocation's nodes: {nodes}")
    agents_dir = os.path.join(work, "agents")
    os.makedirs(agents_dir, exist_ok=True)
    base = free_port_range(NODES) + 1
    # A key pair per node, every node's .pub allowed in (docs/deployment.md).
    keys = os.path.join(work, "keys")
    subprocess.run([MALLEO, "keygen", "--dir", keys, *nodes], check=True, capture_output=True)
    for i, node in enumerate(nodes):
        config = {"agent": {"listen": f"tcp://127.0.0.1:{base + i}", "peers": [f"{nodes[0]}@tcp://127.0.0.1:{base}"],
                            "run_dir": os.path.join(agents_dir, node), "decision_interval": 0.5,
                            "profile_interval": 0.5},
                  "work_stealing": {"idle_threshold": 0.5, "backoff_max": 2.0},
                  "modules": {"decision": "ios"},
                  # n1 measures a CPU of its own, where its processes are bound (MALLEO_NODES below). n2 is the idle
                  # node that asks for work: its profile is static, since on a machine shared with builds no CPU is
                  # sure to be idle (the loop tests measure it for real); the rest is the real decision.
                  "host": {"cpus": [i % os.cpu_count()], "pw": 1.0},
                  # n_max: the launch's processes (--max 2), more pieces than the pool holds being refused.
                  # tolerance 1: the even split of the one process (the only split n_max allows) is accepted for
                  # any power ratio in [0.25, 0.75], i.e. while heat2d gets at least a third of n1's CPU; on a
                  # machine shared with other work it gets less than all of it, and with 0.15 the ratio left the
                  # split's range and ios moved the process whole instead.
                  "ios": {"evacuate_load": 0, "tolerance": 1.0, "n_max": 2},
                  "actions": {"hold_down": 4.0},
                  "security": {"secret_key": os.path.join(keys, node + ".key"), "allowed_keys": keys}}
        if i > 0:
            config["modules"]["profiling"] = "static"
            config["static"] = static_profile(1.0)
            del config["host"]
        with open(os.path.join(agents_dir, node + ".json"), "w") as f:
            json.dump(config, f)
    log = open(os.path.join(work, "agents.log"), "w")
    # The agents: one task per node. Both Slurm nodes are this host, so each picks its configuration (its port and
    # run directory) by Slurm's name for its node; on real nodes one file serves all.
    agents = subprocess.Popen(["srun", "--ntasks-per-node=1", "--overlap", "sh", "-c",
                               f'exec {MALLEOD} --config {agents_dir}/"$SLURMD_NODENAME".json'],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    pattern = f"ipc://{agents_dir}/%n/agent.sock"
    local = {node: pattern.replace("%n", node) for node in nodes}
    runs = []
    try:
        infos = wait_for(lambda: all(os.path.exists(os.path.join(agents_dir, n, "agent.json")) for n in nodes), 30, 0.1)
        check(infos, "srun started an agent on every node")
        ids = {n: json.load(open(os.path.join(agents_dir, n, "agent.json")))["id"] for n in nodes}
        check(ids == {n: n for n in nodes}, f"each agent took its Slurm node's name as its id ({ids})")

        def peers():
            r = subprocess.run([MALLEO, "--agent", local["n1"], "peers", "--json"], capture_output=True, text=True)
            return r.returncode == 0 and {p["id"] for p in json.loads(r.stdout)["peers"]} == set(nodes[1:])
        check(wait_for(peers, 20, 0.2), "the agents form one overlay")

        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   # Both Slurm nodes share this host: the shared-memory transport's segments of the two would
                   # collide (shared/ENVIRONMENT.md); between real nodes Open MPI uses the network anyway.
                   OMPI_MCA_btl="self,tcp", MALLEO_POLL_INTERVAL="0.1",
                   MALLEO_NODES=";".join(f"{n}={i % os.cpu_count()}" for i, n in enumerate(nodes)))
        static_env = {k: v for k, v in env.items() if not k.startswith("SLURM")}
        programs = heat2d.split(",")
        static = {}
        for program in programs:
            r = subprocess.run([MALLEO, "--agent", "off", "run", "-n", "1", "--profile-dir", work, "--", program,
                                *GRID[:-2]], capture_output=True, text=True, env=static_env, timeout=RUN_TIMEOUT)
            check(r.returncode == 0, f"the static run of {os.path.basename(program)} ends well\n{r.stdout}{r.stderr}")
            static[program] = checksum(r.stdout)
        # Open MPI under its mpirun and under srun --mpi=pmix; MPICH under srun --mpi=pmi2.
        for launcher, program in [("mpirun", programs[0]), ("srun", programs[0])] + [("srun", p) for p in programs[1:]]:
            runs.append(None)
            one_run(launcher, program, work, env, pattern, local, nodes, agents_dir, static[program], runs)
    finally:
        for run in runs:
            if run and run.poll() is None:
                run.kill()
                run.wait()
        # SIGTERM to srun reaches every agent, which leaves (none hosts a process any more).
        if agents.poll() is None:
            agents.send_signal(signal.SIGTERM)
            try:
                agents.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(agents.pid, signal.SIGKILL)
                agents.wait()
        log.close()
    return 0


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--inside":
        return inside(sys.argv[2], sys.argv[3])
    heat2d = ",".join(os.path.realpath(p) for p in sys.argv[1:])
    reason = skip_reason()
    if reason:
        skip(f"{reason}")
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="malleo-slurm-")
    os.chmod(work, 0o755)  # munged wants every directory above its socket searchable by all
    cluster = SlurmCluster(os.path.join(work, "slurm"))
    ok = False
    try:
        cluster.start()
        print(f"ok: Slurm up in {time.monotonic() - started:.1f} s")
        r = subprocess.run(["salloc", "-N", str(NODES), sys.executable, os.path.abspath(__file__), "--inside", heat2d,
                            work], env=cluster.env, timeout=RUN_TIMEOUT + 120)
        check(r.returncode == 0, f"the run inside the allocation passed ({r.returncode})")
        ok = True
    finally:
        cluster.stop()
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"logs kept in {work}", file=sys.stderr)
    print(f"slurm test: {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
