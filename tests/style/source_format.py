#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The format rule of the tree (issue 40): every C and C++ source that git tracks is as clang-format (Debian's, with
the tree's .clang-format) writes it. One line per file that is not, with the first line it would change; exit 1.

    source_format.py SOURCE_ROOT [CLANG_FORMAT]

To format the tree: `git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format -i`."""
import re
import shutil
import subprocess
import sys

EXTENSIONS = (".c", ".cc", ".cpp", ".h", ".hpp")


def main():
	root = sys.argv[1]
	tool = sys.argv[2] if len(sys.argv) > 2 else "clang-format"
	if not shutil.which(tool):
		print(f"{tool} not found (scripts/setup.sh installs Debian's clang-format): skipped")
		return 77
	listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
	paths = [p for p in listed.split() if p.endswith(EXTENSIONS)]
	# One process for every file: --dry-run says each place it would change as "FILE:LINE:COL: error: ...".
	run = subprocess.run([tool, "--style=file", "--dry-run", "--Werror", "--ferror-limit=1"] + paths, cwd=root,
			     capture_output=True, text=True)
	first = {}
	for m in re.finditer(r"^(\S+?):(\d+):\d+: error: code should be clang-formatted", run.stderr, re.M):
		first.setdefault(m.group(1), m.group(2))
	if run.returncode != 0 and not first:
		print(f"{tool} failed: {run.stderr.strip()[:500]}")
		return 1
	for path, line in sorted(first.items()):
		print(f"{path}:{line}: not as clang-format writes it")
	print(f"{len(paths) - len(first)} of {len(paths)} sources formatted")
	return 1 if first else 0


if __name__ == "__main__":
	sys.exit(main())
