# SPDX-License-Identifier: Apache-2.0
"""`malleo sim` shows its progress on a terminal (issue 30, point 10): with stderr a terminal (a pseudo-terminal
here) a line `malleo sim: run 1 of 1 (ios): T of D s simulated (P %)` redrawn in place with \\r and cleared at the
end of the run; with stderr a pipe, no such line, and stdout the same either way."""
import os
import pty
import subprocess
import sys

SIM = os.environ["MALLEO_SIM"]
SCENARIO = os.path.join(os.environ["MALLEO_SIM_SCENARIOS"], "fig10_dynamic.json")
# Seconds before a run counts as hung: 100, times MALLEO_TEST_TIME_SCALE (5 in the sanitizer build's asan setup).
HUNG = 100 * float(os.environ.get("MALLEO_TEST_TIME_SCALE", "1"))
ARGS = [SIM, "--scenario", SCENARIO, "--decision", "ios", "--baselines", "none", "--json"]
errors = []

piped = subprocess.run(ARGS, capture_output=True, text=True, timeout=HUNG)
if piped.returncode != 0 or "simulated (" in piped.stderr:
    errors.append(f"piped: status {piped.returncode}, stderr {piped.stderr!r}")

main, secondary = pty.openpty()
p = subprocess.Popen(ARGS, stdout=subprocess.PIPE, stderr=secondary, stdin=subprocess.DEVNULL)
os.close(secondary)
seen = b""
while True:
    try:
        chunk = os.read(main, 4096)
    except OSError:  # EIO: the program closed the terminal's last writer
        break
    if not chunk:
        break
    seen += chunk
stdout = p.stdout.read().decode()
p.wait(timeout=HUNG)
os.close(main)
text = seen.decode(errors="replace")
if p.returncode != 0:
    errors.append(f"on a terminal: status {p.returncode}: {text}")
if "\rmalleo sim: run 1 of 1 (ios): 0.0 of " not in text or " s simulated (" not in text:
    errors.append(f"on a terminal: no progress line: {text!r}")
if "\r\x1b[K" not in text:
    errors.append(f"on a terminal: the progress line is not cleared at the end: {text!r}")
if stdout != piped.stdout:
    errors.append("stdout differs with stderr on a terminal")

if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print("ok: progress on a terminal only, the results unchanged")
