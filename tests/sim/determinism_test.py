# SPDX-License-Identifier: Apache-2.0
"""The same seed gives byte-identical output files; another seed different ones.
Runs malleo-sim on the Fig. 10 scenario with two baselines, with plots."""
import filecmp
import os
import subprocess
import sys
import tempfile

SIM = os.environ["MALLEO_SIM"]
SCENARIO = os.path.join(os.environ["MALLEO_SIM_SCENARIOS"], "fig10_dynamic.json")
# Seconds before a run counts as hung: 100, times MALLEO_TEST_TIME_SCALE (5 in the sanitizer build's asan setup).
HUNG = 100 * float(os.environ.get("MALLEO_TEST_TIME_SCALE", "1"))


def check(condition, message):
    if not condition:
        print("FAIL: " + message, file=sys.stderr)
        sys.exit(1)
    print("ok: " + message)


def run(out, seed):
    r = subprocess.run([SIM, "--scenario", SCENARIO, "--decision", "ios", "--baselines",
                        "static,migration", "--seed", str(seed), "--out", out, "--plot", "--json"],
                       capture_output=True, text=True, timeout=HUNG)
    check(r.returncode == 0, f"malleo-sim --seed {seed} exits 0 ({r.stderr.strip()})")
    return r.stdout


with tempfile.TemporaryDirectory(prefix="malleo-sim-det-") as tmp:
    a, b, c = (os.path.join(tmp, x) for x in "abc")
    out_a, out_b, out_c = run(a, 5), run(b, 5), run(c, 6)
    files = sorted(os.listdir(a))
    check(files == ["ios.csv", "iterations.svg", "migration.csv", "processes.svg", "static.csv",
                    "summary.json", "summary.txt"], f"the expected files are written: {files}")
    same, differ, errors = filecmp.cmpfiles(a, b, files, shallow=False)
    check(same == files and not errors, f"seed 5 twice: every file byte-identical (differ: {differ})")
    check(out_a == out_b, "seed 5 twice: the same JSON summary on stdout")
    same, differ, errors = filecmp.cmpfiles(a, c, files, shallow=False)
    check("ios.csv" in differ and "summary.json" in differ,
          f"seed 6: the ios run and the summary differ from seed 5 (differ: {differ})")

# Bad input: one line, exit 2.
r = subprocess.run([SIM, "--scenario", SCENARIO], capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and "--decision" in r.stderr,
      f"no --decision: one line, exit 2 ({r.stderr.strip()})")
r = subprocess.run([SIM, "--scenario", "/nonexistent.json", "--decision", "ios"],
                   capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot be read" in r.stderr,
      f"missing scenario: one line, exit 2 ({r.stderr.strip()})")
r = subprocess.run([SIM, "--scenario", SCENARIO, "--decision", "ios", "--seed", "x"],
                   capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1, f"bad flag value: one line, exit 2 ({r.stderr.strip()})")
