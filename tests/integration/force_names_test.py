# SPDX-License-Identifier: Apache-2.0
"""`malleo force` with what a person types (issue 44, point 10), and `apps --json`'s key for the id. No MPI: the
applications are registered through the agent's local endpoint, as a rank's profiler registers them.

- an APP that no application's id starts with: status 2, one line listing the ids the agent knows (those registered
  there and those a peer hosts the rank 0 of), not "no application 'x'" alone;
- an APP that starts two ids (`astro`): status 2, one line naming both;
- an APP that starts one id (`heat2d`, the program's name): that application is meant, and the line printed names
  its id; through another agent, the peer's applications are listed too;
- `apps --json` gives each application's id under "app" (as force, timeline and the events do) and under "id"."""
import json
import os

from harness import MALLEO, Cluster, check, envelope, local_request, wait_for
import subprocess


def malleo(agent, *args):
    return subprocess.run([MALLEO, "--agent", agent.local, *args], capture_output=True, text=True, timeout=30)


def one_line(r, status):
    return r.returncode == status and len(r.stderr.strip().splitlines()) == (1 if status else 0)


IDS = ["astro_openmpi-222", "astro_openmpi-333", "heat2d_openmpi-111"]

with Cluster() as cluster:
    a = cluster.add("a")
    b = cluster.add("b", seeds=[a.endpoint])
    for n, app in enumerate(IDS):
        reply = local_request(a.local, envelope("register", "rank0", n + 1, app=app, rank=0, pid=os.getpid(),
                                                size=2, malleable=True))
        check(reply["type"] == "ack", f"{app} registered on a ({reply})")

    r = malleo(a, "force", "nosuch", "split", "1")
    check(one_line(r, 2) and f"no application 'nosuch' is registered here or at a peer's; the ones known here: "
          f"{', '.join(IDS)}" in r.stderr, f"an unknown id lists the known ones ({r.returncode}: {r.stderr.strip()})")

    r = malleo(a, "force", "astro", "split", "1")
    check(one_line(r, 2) and "'astro' could be any of astro_openmpi-222, astro_openmpi-333: give the id" in r.stderr,
          f"a prefix of two ids names both ({r.returncode}: {r.stderr.strip()})")

    r = malleo(a, "force", "heat2d", "split", "1", "--json")
    out = json.loads(r.stdout) if r.returncode == 0 else {}
    check(out.get("app") == "heat2d_openmpi-111" and isinstance(out.get("command"), int),
          f"the program's name means its one application ({r.returncode}: {r.stdout.strip()} {r.stderr.strip()})")
    r = malleo(a, "force", "heat2d_openmpi", "merge", "1")
    check(r.returncode == 2 and "heat2d_openmpi-111" in r.stderr and "busy" in r.stderr,
          f"a second command for it is refused, naming its id ({r.returncode}: {r.stderr.strip()})")

    # b knows a's applications by a's heartbeats (their rank 0 is a's).
    def listed_by_b():
        r = malleo(b, "force", "nosuch", "split", "1")
        return r if one_line(r, 2) and ", ".join(IDS) in r.stderr else None
    r = wait_for(listed_by_b, 15)
    check(r is not None, "through a peer, the applications its peers host are listed")

    r = malleo(a, "apps", "--json")
    apps = json.loads(r.stdout)["apps"] if r.returncode == 0 else []
    check(sorted(x.get("app") for x in apps) == IDS and all(x.get("id") == x.get("app") for x in apps),
          f"apps --json: each id under 'app' and 'id' ({[(x.get('app'), x.get('id')) for x in apps]})")
