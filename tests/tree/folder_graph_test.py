#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The folder graph (issue 40): every #include of the C and C++ sources and every source a meson.build compiles,
as edges between folders. Fails on a loop between folders, on an include of another part's src/ (a part is the
folder holding a src/: agent/, pcm_bridge/, pmpi_profiler/) and on a meson.build compiling a source outside its own
folder. tests/ may use the private headers and sources of what they test; nothing includes tests/.

    folder_graph_test.py [ROOT]     # ROOT: the source tree, by default the one this file is in
"""
import os
import re
import sys

SOURCE_SUFFIXES = ('.c', '.cc', '.cpp', '.h', '.hpp')
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
# A source in a meson.build: a quoted file name ending in a C or C++ suffix.
MESON_SOURCE = re.compile(r"'([^'\s]+\.(?:c|cc|cpp))'")
# Folders that are not sources: build directories (they hold a meson-private/), the fuzzers' corpus.
SKIP_DIRS = {'.git', 'corpus', 'subprojects'}

# Edges that stay for now, each with its reason: (from file, to file).
ALLOWED = {
	# The simulator drives many Cores: core.h is the core library's interface, which helper C is making a
	# dispatcher over components (issue 40); it gets a public place with them.
	('sim/sim_node.h', 'agent/src/core.h'),
	# A benchmark measures the executor's private API as a test would (docs/performance.md, "Redistribution").
	('bench/pcm_redistribution.cpp', 'pcm_bridge/src/executor/executor.h'),
	('bench/pcm_redistribution.cpp', 'pcm_bridge/src/executor/page_adoption.h'),
	('bench/pcm_redistribution.cpp', 'pcm_bridge/src/memory/page_move.h'),
}


def walk(root):
	"""Every file of the tree, relative to root, outside build directories."""
	for folder, dirs, files in os.walk(root):
		if 'meson-private' in dirs or 'meson-info' in dirs:
			dirs[:] = []
			continue
		dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith('.'))
		for name in sorted(files):
			yield os.path.relpath(os.path.join(folder, name), root)


def resolver(files):
	"""A function from (including file, include text) to the tree's file it names, or None (a system header)."""
	by_suffix = {}
	for path in files:
		parts = path.split('/')
		for i in range(len(parts)):
			by_suffix.setdefault('/'.join(parts[i:]), []).append(path)
	known = set(files)

	folders = {os.path.dirname(path) for path in files}

	def resolve(source, text):
		beside = os.path.normpath(os.path.join(os.path.dirname(source), text))
		if beside in known:
			return beside
		if text.startswith('../') and os.path.dirname(beside) in folders:
			return beside  # a file of another folder, missing or not: the folder is what counts
		found = by_suffix.get(os.path.normpath(text), [])
		if len(found) > 1:
			part = source.split('/')[0]
			found = [f for f in found if f.split('/')[0] == part] or found
		if len(found) > 1:
			raise SystemExit(f'{source}: #include "{text}" is ambiguous: {", ".join(found)}')
		return found[0] if found else None
	return resolve


def private_part(path):
	"""The part whose src/ holds path ('agent' for agent/src/core.h), or None."""
	parts = path.split('/')
	return '/'.join(parts[:parts.index('src')]) if 'src' in parts[:-1] else None


def in_tests(path):
	return path.startswith('tests/')


def edges(root, files):
	"""(from file, to file) for every include and every source a meson.build compiles."""
	resolve = resolver([f for f in files if f.endswith(SOURCE_SUFFIXES)])
	for path in files:
		full = os.path.join(root, path)
		if path.endswith(SOURCE_SUFFIXES):
			with open(full, encoding='utf-8', errors='replace') as f:
				for text in INCLUDE.findall(f.read()):
					target = resolve(path, text)
					if target:
						yield path, target
		elif os.path.basename(path) == 'meson.build':
			with open(full, encoding='utf-8') as f:
				for name in MESON_SOURCE.findall(f.read()):
					target = os.path.normpath(os.path.join(os.path.dirname(path), name))
					if os.path.exists(os.path.join(root, target)):
						yield path, target


def problems(root):
	files = list(walk(root))
	graph = {}
	found = []
	for source, target in edges(root, files):
		if (source, target) in ALLOWED:
			continue
		here, there = os.path.dirname(source), os.path.dirname(target)
		if here != there:
			graph.setdefault(here, set()).add(there)
		if in_tests(source):
			continue
		part = private_part(target)
		if part is not None and not source.startswith(part + '/'):
			found.append(f'{source}: reaches into {part}/src: {target}')
		if source.endswith('meson.build') and not target.startswith(here + '/'):
			found.append(f'{source}: compiles another folder\'s source: {target}')
	found += [f'a loop between folders: {" -> ".join(loop)}' for loop in loops(graph)]
	return found


def loops(graph):
	"""One cycle, as a list of folders ending where it starts, for every strongly connected set of folders."""
	index, low, stack, on_stack, result = {}, {}, [], set(), []

	def visit(node):  # Tarjan's algorithm; the graph is small enough for recursion
		index[node] = low[node] = len(index)
		stack.append(node)
		on_stack.add(node)
		for succ in sorted(graph.get(node, ())):
			if succ not in index:
				visit(succ)
				low[node] = min(low[node], low[succ])
			elif succ in on_stack:
				low[node] = min(low[node], index[succ])
		if low[node] == index[node]:
			members = set()
			while True:
				top = stack.pop()
				on_stack.discard(top)
				members.add(top)
				if top == node:
					break
			if len(members) > 1:
				result.append(cycle(graph, node, members))

	for node in sorted(graph):
		if node not in index:
			visit(node)
	return result


def cycle(graph, start, members):
	"""A path from start back to start inside members (breadth first)."""
	previous = {start: None}
	queue = [start]
	while queue:
		node = queue.pop(0)
		for succ in sorted(graph.get(node, ())):
			if succ == start:
				path = [node]
				while previous[path[-1]] is not None:
					path.append(previous[path[-1]])
				return list(reversed(path)) + [start]
			if succ in members and succ not in previous:
				previous[succ] = node
				queue.append(succ)
	return sorted(members)


def main():
	root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
	found = problems(os.path.abspath(root))
	for line in found:
		print(line)
	if found:
		print(f'FAIL: {len(found)} problem(s) in the folder graph')
		return 1
	print('the folder graph has no loop and no reach-in')
	return 0


if __name__ == '__main__':
	sys.exit(main())
