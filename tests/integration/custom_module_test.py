# SPDX-License-Identifier: Apache-2.0
"""A decision module built out of tree, end to end. This build is installed into
a staging directory (meson install --destdir); examples/custom_decision, as
installed there, is built with make and pkg-config alone (PKG_CONFIG_PATH into
the staged tree, no path into the sources or the build tree) and installed into
the module directory malleo-module.pc names; the installed agent, configured
with the module's name, then makes that module's decisions, with their reasons,
in its event stream. Also: the installed agent searches that module directory
by default, every module header compiles with the installed flags alone, and a
module built against the installed headers for a newer ABI minor is refused
with one line (modules_test.py covers a wrong major from the build tree)."""
import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import Cluster, check, envelope, local_request, static_profile, wait_for

BUILD_ROOT = os.environ["MALLEO_BUILD_ROOT"]
SOURCE_ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
MESON = os.environ.get("MESON", "meson")
CXX = os.environ.get("CXX", "c++")


def run(cmd, timeout, **kwargs):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        check(False, f"{' '.join(cmd)} finished within {timeout} s")


def tail(text, lines=15):
    return "\n".join(text.strip().splitlines()[-lines:])


def find(root, name, parent=None):
    """Paths of files called `name` under `root` (in a folder called `parent`)."""
    return sorted(os.path.join(d, name) for d, _, files in os.walk(root)
                  if name in files and (parent is None or os.path.basename(d) == parent))


stage = tempfile.mkdtemp(prefix="malleo-install-")
work = tempfile.mkdtemp(prefix="malleo-oot-")
print(f"staged install in {stage}, out-of-tree builds in {work} (kept if a check fails)")

# 1. Install this build, as a packager would. meson brings anything stale up to date first.
r = run([MESON, "install", "-C", BUILD_ROOT, "--destdir", stage, "--quiet"], timeout=900)
check(r.returncode == 0, f"meson install --destdir into {stage}"
      + (f": {tail(r.stdout + r.stderr)}" if r.returncode else ""))

pc_files = find(stage, "malleo-module.pc")
check(len(pc_files) == 1, f"one malleo-module.pc installed: {pc_files}")
malleod = find(stage, "malleod", "bin")
malleo = find(stage, "malleo", "bin")
check(len(malleod) == 1 and len(malleo) == 1, f"malleod and malleo installed: {malleod} {malleo}")
malleod, malleo = malleod[0], malleo[0]

# 2. pkg-config alone, from the staged tree. A build directory set up before the
# .pc files became relocatable (pkgconfig.relocatable) needs the sysroot instead.
env = {k: v for k, v in os.environ.items() if not k.startswith(("PKG_CONFIG", "MALLEO_MODULE_PATH"))}
env["PKG_CONFIG_PATH"] = os.path.dirname(pc_files[0])


def pkg_config(*args):
    r = run(["pkg-config", *args, "malleo-module"], timeout=30, env=env)
    if r.returncode != 0:
        check(False, f"pkg-config {' '.join(args)} malleo-module: {r.stderr.strip()}")
    return r.stdout.strip()


def staged(path):
    return os.path.normpath(path).startswith(stage + os.sep)


if not staged(pkg_config("--variable=prefix")):
    env["PKG_CONFIG_SYSROOT_DIR"] = stage
moduledir = os.path.normpath(pkg_config("--variable=moduledir"))
check(staged(moduledir), f"moduledir is in the staged tree: {moduledir}")
cflags = pkg_config("--cflags").split()
check("-DMALLEO_MODULE_DSO" in cflags, f"the flags build a shared-object module: {cflags}")
libs = pkg_config("--libs").split()
paths = [os.path.realpath(f[2:]) for f in cflags + libs if f.startswith(("-I", "-L"))]
foreign = [p for p in paths if p.startswith((SOURCE_ROOT + os.sep, os.path.realpath(BUILD_ROOT) + os.sep))]
check(not foreign, f"no flag points into the sources or the build tree: {foreign}")
includes = [os.path.normpath(f[2:]) for f in cflags if f.startswith("-I") and staged(f[2:])]
# The module API is what agent/include/malleo holds; other parts install their
# own headers beside it.
headers = sorted(os.listdir(os.path.join(SOURCE_ROOT, "agent", "include", "malleo")))
missing = [h for h in headers if not any(os.path.isfile(os.path.join(d, "malleo", h)) for d in includes)]
check(headers and not missing, f"every module header is installed where the flags point ({missing} missing)")

# 3. A module built against the installed headers of a newer malleo (ABI minor
# + 1), which also includes every module header, compiled with the installed
# flags alone. Built in the background while make builds the example.
abi = {m: int(v) for m, v in re.findall(r"#define MALLEO_MODULE_ABI_(MAJOR|MINOR) (\d+)",
                                         open(os.path.join(includes[0], "malleo", "module.h")).read())}
newer_dir = os.path.join(work, "newer")
os.makedirs(newer_dir)
with open(os.path.join(newer_dir, "newer_decision.cpp"), "w") as f:
    f.write("".join(f"#include <malleo/{h}>\n" for h in headers) + """
#include <cstdlib>

extern "C" MALLEO_EXPORT const malleo::ModuleInfo malleo_module_info = {
	MALLEO_MODULE_ABI_MAJOR, MALLEO_MODULE_ABI_MINOR + 1, malleo::ModuleKind::Decision, "newer", "1.0", {}};

extern "C" MALLEO_EXPORT malleo::Module *malleo_module_create()
{
	std::abort(); // never reached: the descriptor is checked first
}
""")
newer_build = subprocess.Popen(
    [CXX, "-std=c++20", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror",
     *cflags, "-o", "malleo-decision-newer.so", "newer_decision.cpp", *libs],
    cwd=newer_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
atexit.register(lambda: newer_build.poll() is None and newer_build.kill())

# 4. The example, as installed, built and installed with its Makefile.
examples = find(stage, "Makefile", "custom_decision")
check(len(examples) == 1, f"examples/custom_decision is installed: {examples}")
example = os.path.join(work, "custom_decision")
shutil.copytree(os.path.dirname(examples[0]), example)
r = run(["make", "-C", example], timeout=600, env=env)
check(r.returncode == 0, "make builds the example out of tree"
      + (f": {tail(r.stdout + r.stderr)}" if r.returncode else ""))
r = run(["make", "-C", example, "install"], timeout=60, env=env)
module = os.path.join(moduledir, "malleo-decision-greedy.so")
check(r.returncode == 0 and os.path.isfile(module),
      f"make install puts it into moduledir: {tail(r.stdout + r.stderr, 3)}")
r = run(["nm", "-D", "--defined-only", module], timeout=30)
exported = sorted(s for s in r.stdout.split() if "malleo" in s)
check(exported == ["malleo_module_create", "malleo_module_info"],
      f"the module exports its descriptor and factory and nothing else of malleo: {exported}")

# 5. The installed agent searches moduledir when nothing else is configured.
cfg = os.path.join(work, "nosuch.json")
with open(cfg, "w") as f:
    json.dump({"modules": {"profiling": "static", "decision": "nosuch"}}, f)
r = run([malleod, "--config", cfg, "--run-dir", os.path.join(work, "nosuch"),
         "--listen", "tcp://127.0.0.1:*"], timeout=30, env=env)
searched = re.search(r"searched (\S+) for malleo-decision-nosuch\.so", r.stderr)
check(r.returncode == 2 and searched and searched.group(1).count(":") == 0
      and os.path.normpath(stage + searched.group(1)) == moduledir,
      f"the installed agent's default module directory is moduledir: {r.stderr.strip()}")

# 6. The module at work in installed agents. "busy" runs greedy and hosts six
# processes of a malleable application; "half" (APW 0.55) is below greedy's
# configured min_idle 0.6 though above its default 0.5, "idle" (APW 0.9) above it.
harness.MALLEOD, harness.MALLEO = malleod, malleo
quiet = {"p2p": {"view_size": 2, "shuffle_interval": 0, "gossip_fanout": 0},
         "membership": {"gossip_interval": 0}}
with Cluster() as cluster:
    busy = cluster.add("busy", {
        **quiet,
        "modules": {"profiling": "static", "protocol": "p2p", "decision": "greedy", "path": [moduledir]},
        "static": static_profile(0.1),
        "greedy": {"min_idle": 0.6, "max_give": 2},
        "work_stealing": {"enabled": False}})
    decision = busy.status()["modules"]["decision"]
    check(decision == {"name": "greedy", "source": module, "abi_minor": 3},
          f"the agent loaded greedy by name from the installed module directory ({decision})")
    for rank in range(6):
        reply = local_request(busy.local, envelope("register", "heat-rank", rank + 1, app="heat", rank=rank,
                                                   pid=os.getpid(), size=6, malleable=True))
        check(reply["type"] == "ack", f"rank {rank} of 'heat' registered ({reply['type']})")

    def origin(name, apw):
        return cluster.add(name, {**quiet, "modules": {"profiling": "static", "decision": "none"},
                                  "static": static_profile(apw),
                                  "work_stealing": {"enabled": True, "on_join": True, "timeout": 0.5,
                                                    "backoff_initial": 0.5, "cooldown": 60}},
                           [busy.endpoint])

    origin("half", 0.55)

    def events(agent):
        r = agent.cli("events", "--json", "--for", "0.3")
        return [json.loads(line) for line in r.stdout.splitlines()]

    def passed_half():
        return [e for e in events(busy) if e.get("origin") == "half"
                and e["type"] in ("wrm_forwarded", "wrm_dead_end", "wrm_expired")]

    passes = wait_for(passed_half, timeout=15) or []
    check(passes and passes[0]["reasons"].get("module") == "greedy"
          and passes[0]["reasons"].get("why") == "the origin is not idle enough"
          and passes[0]["reasons"].get("min_idle") == 0.6,
          f"greedy let half's request travel on, below its configured min_idle: {passes[:1]}")

    idle = origin("idle", 0.9)
    check(wait_for(lambda: idle.counters().get("wrm.answered", 0) >= 1, timeout=15),
          "idle's request was answered")
    busy_events = events(busy)
    answers = [e for e in busy_events if e["type"] == "wrm_answered"]
    actions = [e for e in busy_events if e["type"] == "action"]
    check(answers and all(a["origin"] == "idle" for a in answers),
          f"busy answered idle and nobody else: {[a['origin'] for a in answers]}")
    reasons = answers[0]["reasons"]
    check(reasons.get("module") == "greedy" and reasons.get("origin_apw") == 0.9
          and reasons.get("local_apw") == 0.1 and reasons.get("active") == 6 and reasons.get("give") == 2,
          f"the answer carries greedy's reasons: {reasons}")
    check(actions and all(
        a["kind"] == "transfer" and a["trigger"] == "wrm" and a["app"] == "heat"
        and a["params"] == {"app": "heat", "processes": 2, "target": "idle"}
        and a["reasons"].get("module") == "greedy" for a in actions),
          f"greedy's action: transfer min(6 / 2, max_give 2) = 2 processes of heat to idle: {actions}")
    replies = [e for e in events(idle) if e["type"] == "wrm_reply"]
    check(replies and replies[0]["responder"] == "busy" and replies[0]["reasons"].get("give") == 2,
          f"idle received greedy's reasons with the reply: {replies[:1]}")
    c = busy.counters()
    check(c.get("actions.transfer", 0) == c.get("decisions.wrm_answer", 0) >= 1
          and not any(k.startswith("actions.") and k != "actions.transfer" for k in c),
          f"one transfer per answer and no other action ({c.get('actions.transfer', 0)} transfers, "
          f"{c.get('decisions.wrm_answer', 0)} answers)")

# 7. The newer-ABI module is refused before any of its code runs.
out, _ = newer_build.communicate(timeout=600)
check(newer_build.returncode == 0, "every module header compiles with the installed flags alone"
      + (f": {tail(out)}" if newer_build.returncode else ""))
cfg = os.path.join(work, "newer.json")
with open(cfg, "w") as f:
    json.dump({"modules": {"profiling": "static", "decision": "newer", "path": [newer_dir]}}, f)
r = run([malleod, "--config", cfg, "--run-dir", os.path.join(work, "newer-run"),
         "--listen", "tcp://127.0.0.1:*"], timeout=30, env=env)
lines = r.stderr.strip().splitlines()
major, minor = abi["MAJOR"], abi["MINOR"]
check(r.returncode == 2 and len(lines) == 1 and "decision module 'newer' refused" in lines[0]
      and f"module ABI {major}.{minor + 1} is newer than the agent's {major}.{minor}" in lines[0],
      f"a module for a newer ABI minor is refused in one line: {r.stderr.strip()}")

shutil.rmtree(stage, ignore_errors=True)
shutil.rmtree(work, ignore_errors=True)
