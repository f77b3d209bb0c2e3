#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The size rule of the tree (issue 40): no C or C++ source file over 600 lines and no function over 80 lines,
outside tests/, but for the entries of size_allowlist.txt, each with its reason.

    source_sizes.py SOURCE_ROOT          check: one line per breach, exit 1 if any
    source_sizes.py SOURCE_ROOT --list   every function over the limit, allowed or not

A function is found without a compiler: comments, strings and preprocessor lines are blanked, braces are counted,
and a `{` at file, namespace or extern "C" level whose text since the last `;`, `{` or `}` holds a `(` and is not a
class, struct, union, enum or namespace opens one. Its length runs from the line of its name to its closing brace.
Lambdas and local classes count towards the function that holds them."""
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
EXTENSIONS = (".c", ".cc", ".cpp", ".h", ".hpp")
SKIPPED_TOP = ("tests/", "build")


def sources(root):
	out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
	return [p for p in out.split() if p.endswith(EXTENSIONS) and not p.startswith(SKIPPED_TOP)]


def blanked(text):
	"""The text with comments, string and character literals and preprocessor lines replaced by spaces, newlines
	kept, so that braces and line numbers are the code's."""
	out = []
	i, n = 0, len(text)
	at_line_start = True
	while i < n:
		c = text[i]
		if at_line_start and c == "#":
			j = i
			while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
				j += 1
			out.append(re.sub(r"[^\n]", " ", text[i:j]))
			i = j
			continue
		if c == "/" and text.startswith("//", i):
			j = text.find("\n", i)
			j = n if j < 0 else j
			out.append(" " * (j - i))
			i = j
			continue
		if c == "/" and text.startswith("/*", i):
			j = text.find("*/", i + 2)
			j = n if j < 0 else j + 2
			out.append(re.sub(r"[^\n]", " ", text[i:j]))
			i = j
			continue
		if c == "R" and text.startswith('R"', i):
			m = re.match(r'R"([^(\s]*)\(', text[i:])
			if m:
				end = text.find(")" + m.group(1) + '"', i)
				j = n if end < 0 else end + len(m.group(1)) + 2
				out.append(re.sub(r"[^\n]", " ", text[i:j]))
				i = j
				continue
		if c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
			j = i + 1
			while j < n and text[j] != c and text[j] != "\n":
				j += 2 if text[j] == "\\" else 1
			out.append(" " * (min(j + 1, n) - i))
			i = j + 1
			continue
		out.append(c)
		at_line_start = c == "\n" or (at_line_start and c in " \t")
		i += 1
	return "".join(out)


CONTAINER = re.compile(r"\b(namespace|class|struct|union|enum)\b|extern\s*$")


def functions(text):
	"""(name, first line, last line) of every function body at file or namespace level."""
	code = blanked(text)
	found = []
	stack = []  # per open brace: "container", "function" or "other"
	start = 0  # where the text before the next brace begins
	open_function = None
	for i, c in enumerate(code):
		if c in ";":
			if not stack or stack[-1] == "container":
				start = i + 1
		elif c == "{":
			head = code[start:i]
			if open_function is not None or (stack and stack[-1] != "container"):
				stack.append("other")
			elif CONTAINER.search(head) and "(" not in head.split("{")[-1].split(")")[0] or \
					re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", head) or re.search(r'extern\s*$', head):
				stack.append("container")
			elif "(" in head and not re.search(r"=\s*$", head):
				name = re.findall(r"([~\w:]+(?:operator\s*\S+)?)\s*\(", head)
				first = code.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
				open_function = (name[0] if name else "?", first)
				stack.append("function")
			else:
				stack.append("other")
			start = i + 1
		elif c == "}":
			kind = stack.pop() if stack else "other"
			if kind == "function" and open_function is not None:
				found.append((open_function[0], open_function[1], code.count("\n", 0, i) + 1))
				open_function = None
			if not stack or stack[-1] == "container":
				start = i + 1
	return found


def allowlist(path):
	allowed = {}
	with open(path) as f:
		for line in f:
			line = line.split("#", 1)[0].strip()
			if line:
				where, _, reason = line.partition(" ")
				allowed[where] = reason.strip()
	return allowed


def main():
	root = sys.argv[1]
	listing = "--list" in sys.argv[2:]
	allowed = allowlist(os.path.join(os.path.dirname(os.path.abspath(__file__)), "size_allowlist.txt"))
	used = set()
	breaches = []
	for path in sources(root):
		with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
			text = f.read()
		lines = text.count("\n")
		if lines > MAX_FILE_LINES:
			if path in allowed:
				used.add(path)
			else:
				breaches.append(f"{path}: {lines} lines, more than {MAX_FILE_LINES}")
		for name, first, last in functions(text):
			length = last - first + 1
			if length <= MAX_FUNCTION_LINES:
				continue
			key = f"{path}:{name}"
			if listing:
				print(f"{length:5d} {key}:{first}{'  (allowed)' if key in allowed else ''}")
			if key in allowed:
				used.add(key)
			else:
				breaches.append(f"{path}:{first}: {name} is {length} lines, more than {MAX_FUNCTION_LINES}")
	for key in sorted(set(allowed) - used):
		breaches.append(f"size_allowlist.txt: {key} is within the limits now (or gone): remove its entry")
	for b in breaches:
		print(b)
	if not listing and not breaches:
		print(f"every file within {MAX_FILE_LINES} lines and every function within {MAX_FUNCTION_LINES}, "
		      f"{len(allowed)} allowed")
	return 1 if breaches and not listing else 0


if __name__ == "__main__":
	sys.exit(main())
