#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Every example command of README.md, docs/*.md, sim/README.md and examples/*/README.md, run as written, in document
order.

What is a command: each line of a ```sh / ```bash / ```shell / ```console block (a `\\` at the end joins the next
line; blank and `#` lines are not commands), and in any block, plain ``` included, each line after a `$ ` prompt
(the lines up to the next prompt are its output). Blocks of other languages (text, json, cpp, ...) hold none.

Each command runs with `bash -c` exactly as written, in a fresh scratch directory that looks like the source tree
(its top-level entries are links to the source's, `build` to the build being tested), with the build's malleo,
malleod, malleo-sim, heat2d_openmpi, heat2d_mpich, ring_openmpi, ring_mpich and malleo-pmpi on the PATH (as the
PATH line of docs/cli.md puts them), and `./ring`, `./my_mpi_app`, `./app` the docs' stand-in MPI program
(examples/ring). The whole test runs in a mount namespace of its own with empty /tmp and /run/malleo,
so the docs' defaults (/run/malleo/agent.sock, /tmp/malleo-cluster-1000, /tmp/fig10) are private to it and
nothing of another run is seen or touched. Two things differ from what is written, because they differ on every
run: an application id of the docs (`heat2d_openmpi-636354561`) stands for the one running application of that
program (as `malleo apps --json` names it), and Open MPI is allowed to run as root and oversubscribed (as
docs/pmpi-profiler.md tells root to do; this machine has 2 cores).

What a doc's prose assumes but its blocks do not show (a cluster up, an application running) is said in HTML
comments of that Markdown file, invisible when rendered, read here in order with the commands:

  <!-- docs-test: CMD -->         run CMD (a trailing `&`: in the background) and require status 0
  <!-- docs-test wait: CMD -->    run CMD until it exits 0 (at most 60 s, times MALLEO_TEST_TIME_SCALE)
  <!-- docs-test wait: jobs -->   wait for the document's background commands to end (at most 60 s, scaled so)
  <!-- docs-test exit: N M ... --> the statuses of the next block's commands, in order (default 0)
  <!-- docs-test file: NAME -->   write the next block (any language) to NAME in the working directory
  <!-- docs-test skip: REASON --> the next block's commands cannot run on one machine (REASON says why, in the
                                  doc itself, e.g. they need a cluster of machines): shown as skipped, not run

A `cd` in a command holds for the document's next commands, as in one shell.

A command that cannot run here is listed, with why, in tests/docs/exempt.txt. The test fails when a command
fails, exceeds its time (then its process group gets SIGTERM, so that a benchmark takes down what it set up, and
SIGKILL 30 s later), is neither run nor exempt, or when an exemption names no command of the docs. An exempt
benchmark command (its `why:` starts with "benchmarks") is not run but checked against drift: the programs it names
exist (a ninja target of the build, a script of bench/, a program of the build), and every `--option` it passes
one appears in that program's `--help`.
Background commands (`... &`) run until the end of their document, then get SIGTERM (SIGKILL after 10 s); then
`malleo cluster down`, and any process still carrying this run's mark in its environment is killed.
"""
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TREES = []  # the source and build trees when they are under /tmp (inside_namespace)
SOURCE = os.environ.get('MALLEO_SOURCE_ROOT', os.path.dirname(os.path.dirname(HERE)))
EXEMPT_FILE = os.path.join(HERE, 'exempt.txt')
# Seconds a command may take, and a `wait:` until it succeeds: times MALLEO_TEST_TIME_SCALE (5 in the sanitizer build's
# asan setup, 1 otherwise), as the harness's waits.
TIME_SCALE = float(os.environ.get('MALLEO_TEST_TIME_SCALE', '1'))
COMMAND_TIMEOUT = 150 * TIME_SCALE
WAIT_TIMEOUT = 60 * TIME_SCALE
SHELL_LANGS = {'sh', 'bash', 'shell', 'console'}
DIRECTIVE = re.compile(r'^\s*<!--\s*docs-test(?:\s+(wait|exit|file|skip))?\s*:\s*(.*?)\s*-->\s*$')
# An application id of the docs: a program of the build and a job number.
APP_ID = re.compile(r'\b(heat2d_openmpi|heat2d_mpich)-\d{6,}\b')

# Facts a command's output must show where the doc shows them (not values the code under test printed: what the
# doc's reader is told to expect). Each key must be a command of the docs.
CHECKS = {
	('docs/cli.md', 'malleo stauts'): r"did you mean 'status'",
	('docs/cli.md', 'malleo --node n1 status'): r'^agent +n1 ',
	('docs/cli.md', 'malleo events --json --count 1'): r'^\{"agent":"n1",.*"type":"started"\}\n$',
	('docs/cli.md', 'malleo cluster up --nodes 4'): r'^cluster of 4 nodes up in /tmp/malleo-cluster-1000\n',
	('docs/cli.md', 'malleo cluster down'): r'cluster in /tmp/malleo-cluster-1000 is down',
	('docs/cli.md', 'malleo load --node n2 --for 60'): r'^n2: 1 busy process on CPU',
	('docs/cli.md', 'malleo --node n2 status | grep profile'): r'^profile +PW ',
	('docs/cli.md', 'malleo load --stop'): r'^n2: ended 1 busy process',
	('docs/cli.md', 'malleo apps'): r'heat2d_openmpi-\d+ +malleable',
	('docs/cli.md', 'malleo force heat2d_openmpi-636354561 split 2 --wait 30'): r'ok: split .*2 -> 4 processes|'
		r'failed: split .*only 1 spare process',
	('docs/cli.md', 'malleo force heat2d_openmpi-636354561 merge 1'): r'queued: merge 1|refused.*busy',
	('docs/cli.md', 'malleo drain n2 --wait 60'): r'n2 drained in',
	('docs/cli.md', 'malleo --node n3 events --count 4'): r'n3 +started',
	('docs/cli.md', 'malleo cluster add'): r'n5 joined the cluster',
	('docs/cli.md', 'malleo cluster status'): r'4 of 4 nodes running',
	('docs/cli.md', 'malleo timeline /tmp/malleo-cluster-1000/*/events.jsonl'):
		r'heat2d_openmpi-\d+: 1 reconfiguration, [1-9]\d* progress reports?;[^$]*2 -> 3 +split 1',
	('docs/cli.md', 'malleo plot /tmp/malleo-cluster-1000/*/events.jsonl -o heat2d.png'): r'wrote heat2d.png: heat2d_openmpi',
	('docs/cli.md', 'malleo run -n 2 -- ring_openmpi 100'): r'ring: 100 rounds over 2 ranks, token 200\n',
	('README.md', 'build/cli/malleo apps                         # the application\'s id, e.g. heat2d_openmpi-1234567'):
		r'heat2d_openmpi-\d+',
	('README.md', 'build/cli/malleo status                       # the local agent (MALLEO_AGENT or --agent to pick '
		'another)'): r'^agent +solo ',
	('README.md', 'build/cli/malleo cluster add                  # one more node joins it (n5)'):
		r'^n5 joined [^\n]*\n(.*\n)*next:\n  malleo --node n5 peers\n  malleo cluster status\n$',
	('README.md', 'build/cli/malleo run -n 4 -- build/examples/ring/ring_openmpi'):
		r'ring: 10 rounds over 4 ranks, token 40\n',
	('README.md', 'build/cli/malleo report malleo-profile-ring_openmpi-*.json'): r'^ring_openmpi +job \S+ +4 of 4 ranks',
	('README.md', 'MALLEO_FORCE="split@10:2,merge@20:1,migrate@30:1" \\ '
		'build/cli/malleo run -n 2 --max 6 -- build/examples/heat2d/heat2d_openmpi'):
		r'(?s)(?=.*^iteration 10: 4 processes$)(?=.*^iteration 20: 3 processes$)(?=.*^iteration 30: 3 processes$)',
	('README.md', 'build/cli/malleo force heat2d_openmpi split 2 --wait 30'): r'ok: split .*2 -> 4 processes',
	('README.md', 'build/cli/malleo sim --scenario sim/scenarios/fig10_dynamic.json --decision ios --out /tmp/fig10 '
		'--plot'): r'\nios +\d',
}


def fail(message):
	print(f'FAIL: {message}', flush=True)
	sys.exit(1)


def docs():
	"""README.md, docs/*.md, and the READMEs of the simulator and the examples."""
	found = lambda pattern: sorted(os.path.relpath(p, SOURCE) for p in glob.glob(os.path.join(SOURCE, pattern)))
	return ['README.md'] + found('docs/*.md') + ['sim/README.md'] + found('examples/*/README.md')


def extract(relpath):
	"""The document's items in order: ('cmd', line, text, output, exit) and ('hidden'|'wait', line, text)."""
	lines = open(os.path.join(SOURCE, relpath), encoding='utf-8').read().split('\n')
	items, exits, file_name, skip = [], [], None, None
	i = 0
	while i < len(lines):
		line = lines[i]
		fence = re.match(r'^\s*```\s*([\w+-]*)', line)
		if not fence:
			directive = DIRECTIVE.match(line)
			if directive:
				kind, text = directive.groups()
				if kind == 'exit':
					exits = [int(x) for x in text.split()]
				elif kind == 'file':
					file_name = text
				elif kind == 'skip':
					skip = text
				else:
					items.append(('wait' if kind else 'hidden', i + 1, text))
			i += 1
			continue
		lang = fence.group(1).lower()
		end = i + 1
		while end < len(lines) and not re.match(r'^\s*```', lines[end]):
			end += 1
		body = lines[i + 1:end]
		first = i + 2
		i = end + 1
		if file_name:
			items.append(('file', first - 1, file_name, '\n'.join(body) + '\n'))
			file_name = None
		prompted = any(l.startswith('$ ') for l in body)
		if lang not in SHELL_LANGS and not (lang == '' and prompted):
			continue
		block = []
		j = 0
		while j < len(body):
			raw = body[j]
			if prompted and not raw.startswith('$ '):
				if block:
					block[-1][3].append(raw)
				j += 1
				continue
			text = raw[2:] if prompted else raw
			if not text.strip() or text.lstrip().startswith('#'):
				j += 1
				continue
			start = j
			while text.endswith('\\') and j + 1 < len(body):
				j += 1
				text += '\n' + body[j]
			block.append(['cmd', first + start, text, []])
			j += 1
		if exits and len(exits) != len(block):
			fail(f'{relpath}:{first - 1}: docs-test exit lists {len(exits)} statuses for {len(block)} commands')
		for k, item in enumerate(block):
			if skip:
				items.append(('skip', item[1], item[2], skip))
			else:
				items.append(('cmd', item[1], item[2], item[3], exits[k] if exits else 0))
		exits, skip = [], None
	return items


def read_exemptions():
	"""{(file, command): reason} from exempt.txt: `why: REASON` lines, each followed by its `FILE: COMMAND` lines
	(a command of several lines joined with a `\\` newline, as in the doc, is written on one line with ` \\ `)."""
	exempt, reason = {}, None
	for number, line in enumerate(open(EXEMPT_FILE, encoding='utf-8'), 1):
		line = line.rstrip('\n')
		if not line.strip() or line.startswith('#'):
			continue
		if line.startswith('why:'):
			reason = line[4:].strip()
			continue
		if not reason:
			fail(f'exempt.txt:{number}: an exemption without a `why:` line before it')
		path, sep, command = line.partition(': ')
		if not sep:
			fail(f'exempt.txt:{number}: not `FILE: COMMAND`')
		exempt[(path, command)] = (reason, number)
	return exempt


def bench_drift(text, variables):
	"""Why an exempt benchmark command would not run as written, or None: a program it names missing, a ninja target
	the build does not have, an option its program's --help does not list. `NAME="..."` lines set variables for the
	commands after them (`$R --repeats 9`)."""
	build = os.environ['MALLEO_BUILD_ROOT']
	words = shlex.split(text.replace('\\\n', ' '), comments=True)
	if len(words) == 1 and re.match(r'^[A-Z_]+=', words[0]):
		name, value = words[0].split('=', 1)
		variables[name] = value
		return None
	words = [w for word in words for w in (shlex.split(variables[word[1:]]) if word[1:] in variables and
						  word.startswith('$') else [word])]
	commands = [[]]
	for word in words:
		if word == '&&':
			commands.append([])
		else:
			commands[-1].append(word)
	for command in commands:
		while command and re.match(r'^[A-Z_]+=', command[0]):
			command = command[1:]
		if not command or command[0] == 'meson':
			continue
		if command[0] == 'ninja':
			for target in command[3:] if command[1] == '-C' else command[1:]:
				if subprocess.run(['ninja', '-C', build, '-t', 'query', target], capture_output=True).returncode:
					return f'ninja target {target} is not one of the build'
			continue
		at = next((i for i, w in enumerate(command) if re.match(r'^(build[^/]*|bench)/', w)), None)
		if at is None:
			return f'no program of bench/ or of the build in `{" ".join(command)}`'
		program = re.sub(r'^build[^/]*/', build + '/', command[at])
		program = program if program.startswith('/') else os.path.join(SOURCE, program)
		if not os.access(program, os.X_OK):
			return f'{command[at]}: no such program ({program})'
		options = [w.split('=', 1)[0] for w in command[at + 1:] if w.startswith('--')]
		if options:
			helped = subprocess.run([program, '--help'], capture_output=True, text=True, timeout=60 * TIME_SCALE)
			missing = [o for o in options if not re.search(re.escape(o) + r'\b', helped.stdout + helped.stderr)]
			if missing:
				return f'{command[at]} --help does not list {", ".join(missing)}'
	return None


def one_line(command):
	return re.sub(r'\\\n\s*', '\\\\ ', command)


class Session:
	"""One document's run: its environment, its background commands."""

	def __init__(self, relpath, root, bindir, mark):
		self.relpath = relpath
		self.cwd = tempfile.mkdtemp(prefix='doc-', dir=root)
		self.cwd_file = self.cwd + '.cwd'
		for entry in os.listdir(SOURCE):
			if entry not in ('build', '.git'):
				os.symlink(os.path.join(SOURCE, entry), os.path.join(self.cwd, entry))
		os.symlink(os.environ['MALLEO_BUILD_ROOT'], os.path.join(self.cwd, 'build'))
		for name in ('ring', 'my_mpi_app'):
			os.symlink(os.environ['DOCS_RING'], os.path.join(self.cwd, name))
		# docs/pmpi-profiler.md runs `./app` under both launchers: the ring built for the one that started it
		# (MPICH's hydra gives its ranks PMI_RANK).
		with open(os.path.join(self.cwd, 'app'), 'w') as f:
			f.write(f'#!/bin/sh\n[ -n "$PMI_RANK" ] && exec {os.environ["DOCS_RING_MPICH"]} "$@"\n'
				f'exec {os.environ["DOCS_RING"]} "$@"\n')
		os.chmod(os.path.join(self.cwd, 'app'), 0o755)
		self.env = dict(os.environ)
		self.env.update({
			'PATH': bindir + ':' + os.environ['PATH'],
			'HOME': self.cwd,
			'MALLEO_CLUSTER_DIR': '/tmp/malleo-cluster-1000',
			'OMPI_ALLOW_RUN_AS_ROOT': '1',
			'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1',
			'OMPI_MCA_rmaps_base_oversubscribe': '1',
			'MALLEO_DOCS_TEST_MARK': mark,
		})
		for name in ('MALLEO_AGENT', 'MALLEO_PROFILE_DIR', 'MALLEO_FORCE', 'MALLEO_NODE'):
			self.env.pop(name, None)
		self.background = []

	def substitute(self, command):
		if not APP_ID.search(command):
			return command
		out = subprocess.run([os.environ['MALLEO'], 'apps', '--json'], env=self.env, cwd=self.cwd,
				     capture_output=True, text=True, timeout=30 * TIME_SCALE)
		ids = [a.get('id', '') for a in json.loads(out.stdout or '{}').get('apps', [])] if out.returncode == 0 else []

		def running(match):
			found = [i for i in ids if i.startswith(match.group(1) + '-')]
			if len(found) != 1:
				fail(f'{self.relpath}: {match.group(0)}: want one running {match.group(1)}, `malleo apps` shows {ids}')
			return found[0]
		return APP_ID.sub(running, command)

	def write(self, line, name, content):
		with open(os.path.join(self.cwd, name), 'w') as f:
			f.write(content)
		print(f'{self.relpath}:{line}: wrote the block to {name}', flush=True)

	def command_env(self, text):
		"""The environment a command runs in. Under the sanitizer setup `malleo sim` (and `malleo-sim`) gets ASan's fast unwinder back,
		as the suite's tests without MPI do (tests/meson.build, mpi_free_env): it runs no MPI, whose leaks need the
		slow one to be suppressed, and with the slow one the documents' simulations run past any limit."""
		if 'ASAN_OPTIONS' in self.env and re.match(r'\s*((build/cli/)?malleo sim|(build/sim/)?malleo-sim)\b', text):
			return dict(self.env, ASAN_OPTIONS=self.env['ASAN_OPTIONS'] + ':fast_unwind_on_malloc=1')
		return self.env

	def run(self, line, command, expect=0, hidden=False):
		where = f'{self.relpath}:{line}'
		text = self.substitute(command)
		env = self.command_env(text)
		if text.rstrip().endswith('&') and not text.rstrip().endswith('&&'):
			body = text.rstrip()[:-1]
			log = open(os.path.join(self.cwd, f'background-{line}.log'), 'w')
			process = subprocess.Popen(['bash', '-c', body], cwd=self.cwd, env=env, stdout=log,
						   stderr=subprocess.STDOUT, start_new_session=True)
			self.background.append((where, text, process, log.name))
			print(f'{where}: started in the background: {text}', flush=True)
			return ''
		started = time.monotonic()
		# The command as written, then where it left the shell (its `cd`), keeping its status.
		process = subprocess.Popen(['bash', '-c', f'{text}\n__status=$?; pwd >{self.cwd_file}; exit $__status'],
					   cwd=self.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
					   start_new_session=True)
		try:
			stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT)
		except subprocess.TimeoutExpired:
			stdout, stderr = stop_group(process)
			fail(f'{where}: `{text}` ran more than {COMMAND_TIMEOUT:g} s\n{stdout}\n{stderr}')
		out = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
		seconds = time.monotonic() - started
		if os.path.exists(self.cwd_file):
			self.cwd = open(self.cwd_file).read().strip() or self.cwd
			os.unlink(self.cwd_file)
		print(f'{where}: status {out.returncode} in {seconds:.1f} s: {one_line(text)}', flush=True)
		shown = (out.stdout + out.stderr).rstrip('\n').split('\n')
		print(''.join(f'    | {l}\n' for l in shown[:8]) + (f'    | ({len(shown) - 8} more lines)\n' if len(shown) > 8 else ''),
		      end='', flush=True)
		if out.returncode != expect:
			fail(f'{where}: `{text}` exited {out.returncode}, the doc says {expect}\n--- stdout\n{out.stdout}'
			     f'\n--- stderr\n{out.stderr}\n--- background\n{self.background_logs()}')
		if out.returncode != 0 and len(out.stderr.strip().split('\n')) != 1:
			fail(f'{where}: `{text}` failed with more than one line on stderr:\n{out.stderr}')
		return out.stdout + out.stderr

	def wait(self, line, command):
		deadline = time.monotonic() + WAIT_TIMEOUT
		if command == 'jobs':
			for where, text, process, _ in self.background:
				try:
					process.wait(max(1, deadline - time.monotonic()))
				except subprocess.TimeoutExpired:
					fail(f'{self.relpath}:{line}: `{text}` ({where}) did not end within {WAIT_TIMEOUT:g} s\n'
					     f'{self.background_logs()}')
			return
		while True:
			out = subprocess.run(['bash', '-c', command], cwd=self.cwd, env=self.env, capture_output=True, text=True,
					     timeout=COMMAND_TIMEOUT)
			if out.returncode == 0:
				return
			if time.monotonic() > deadline:
				fail(f'{self.relpath}:{line}: `{command}` did not succeed within {WAIT_TIMEOUT:g} s\n{out.stdout}{out.stderr}\n'
				     f'--- background\n{self.background_logs()}')
			time.sleep(0.2)

	def background_logs(self):
		return '\n'.join(f'{where} `{text}`:\n{open(log).read()[-3000:]}' for where, text, _, log in self.background)

	def finish(self):
		"""The document's end: its background commands get SIGTERM (their process group), SIGKILL after 10 s."""
		for where, text, process, _ in self.background:
			if process.poll() is None:
				os.killpg(process.pid, signal.SIGTERM)
		for where, text, process, _ in self.background:
			try:
				process.wait(10)
			except subprocess.TimeoutExpired:
				os.killpg(process.pid, signal.SIGKILL)
				process.wait()
		self.background = []
		subprocess.run([os.environ['MALLEO'], 'cluster', 'down'], env=self.env, cwd=self.cwd, capture_output=True,
			       timeout=60 * TIME_SCALE)


def stop_group(process):
	"""A command past its limit: SIGTERM to its process group, so that what it set up (a benchmark's cluster of hosts)
	is taken down by its own hands; SIGKILL if it has not ended 30 s later. Returns its output so far."""
	os.killpg(process.pid, signal.SIGTERM)
	try:
		return process.communicate(timeout=30 * TIME_SCALE)
	except subprocess.TimeoutExpired:
		os.killpg(process.pid, signal.SIGKILL)
		return process.communicate()


def kill_marked(mark):
	"""Whatever a document started and left behind (agents of a cluster, loads, ranks): it carries the mark."""
	token = f'MALLEO_DOCS_TEST_MARK={mark}'.encode()
	for pid in os.listdir('/proc'):
		if not pid.isdigit() or int(pid) == os.getpid():
			continue
		try:
			environ = open(f'/proc/{pid}/environ', 'rb').read().split(b'\0')
		except OSError:
			continue
		if token in environ:
			try:
				os.kill(int(pid), signal.SIGKILL)
				print(f'killed left-over process {pid}', flush=True)
			except OSError:
				pass


def mount_points():
	return [line.split()[4] for line in open('/proc/self/mountinfo')]


def inside_namespace():
	# Private /tmp and /run/malleo: the docs' default paths, seen by no other process of the machine.
	os.makedirs('/run/malleo', exist_ok=True)
	# The source and build trees may be under /tmp themselves (a clone there): held open across the new /tmp and
	# bound back at their paths.
	trees = sorted({os.path.realpath(p) for p in (SOURCE, os.environ['MALLEO_BUILD_ROOT'])})
	trees = [t for t in trees if t.startswith('/tmp/') and not any(t.startswith(o + '/') for o in trees)]
	TREES.extend(trees)
	held = [os.open(t, os.O_RDONLY | os.O_DIRECTORY) for t in trees]
	for target, mode in (('/tmp', '1777'), ('/run/malleo', '0700')):
		subprocess.run(['mount', '-t', 'tmpfs', '-o', f'mode={mode}', 'tmpfs', target], check=True)
	for tree, fd in zip(trees, held):
		os.makedirs(tree, exist_ok=True)
		# --no-canonicalize: mount(8) would read the fd's link back to the path, now the empty one
		subprocess.run(['mount', '--no-canonicalize', '--bind', f'/proc/self/fd/{fd}', tree], check=True, pass_fds=(fd,))
		os.close(fd)
	exempt = read_exemptions()
	root = tempfile.mkdtemp(prefix='malleo-docs-')
	bindir = os.path.join(root, 'bin')
	os.makedirs(bindir)
	build = os.environ['MALLEO_BUILD_ROOT']
	for path in (os.environ['MALLEO'], os.environ['MALLEOD'], os.environ['MALLEO_SIM'], os.environ['HEAT2D_OPENMPI'],
		     os.environ['HEAT2D_MPICH'], os.environ['DOCS_RING'], os.environ['DOCS_RING_MPICH'],
		     os.path.join(build, 'pmpi_profiler', 'malleo-pmpi')):
		if os.path.exists(path):
			os.symlink(path, os.path.join(bindir, os.path.basename(path)))
	mark = f'{os.getpid()}-{time.time()}'
	# For the docs' set-up comments: `docs-test-signal STOP|CONT|TERM PROGRAM` signals the processes of the running
	# application of PROGRAM, by the pids its agents list (to hold a command queued, or to end the application).
	helper = os.path.join(bindir, 'docs-test-signal')
	with open(helper, 'w') as f:
		f.write(f'''#!{sys.executable}
import json, os, signal, subprocess, sys
apps = json.loads(subprocess.run([{os.environ['MALLEO']!r}, 'apps', '--json'], capture_output=True, text=True,
				 check=True).stdout)['apps']
pids = [p['pid'] for a in apps if a['id'].startswith(sys.argv[2] + '-') for p in a.get('processes', [])]
if not pids:
	sys.exit('docs-test-signal: no process of ' + sys.argv[2])
for pid in pids:
	os.kill(pid, getattr(signal, 'SIG' + sys.argv[1]))
''')
	os.chmod(helper, 0o755)

	used, ran, checked, problems = set(), 0, 0, []
	all_commands = {}
	for relpath in docs():
		items = extract(relpath)
		for item in items:
			if item[0] == 'cmd':
				all_commands[(relpath, one_line(item[2]))] = item
	for key in CHECKS:
		if key not in all_commands:
			problems.append(f'a check names `{key[1]}` of {key[0]}, which is no command there')
	for key, (reason, number) in exempt.items():
		if key not in all_commands:
			problems.append(f'exempt.txt:{number}: `{key[1]}` is no command of {key[0]} (any more): remove it')
	for relpath in docs():
		variables = {}  # a document's `NAME="..."` lines, for its later commands
		for item in extract(relpath):
			key = (relpath, one_line(item[2])) if item[0] == 'cmd' else None
			if key in exempt and exempt[key][0].startswith('benchmarks'):
				drift = bench_drift(item[2], variables)
				if drift:
					problems.append(f'{relpath}:{item[1]}: `{key[1]}`: {drift}')
				checked += 1
	if problems:
		fail('\n'.join(problems))

	mounts = mount_points()
	started = time.monotonic()
	# MALLEO_DOCS_ONLY=docs/cli.md runs one document's commands (the checks of the lists still cover all).
	only = os.environ.get('MALLEO_DOCS_ONLY')
	for relpath in docs():
		if only and relpath != only:
			continue
		items = extract(relpath)
		if not any(i[0] == 'cmd' and (relpath, one_line(i[2])) not in exempt for i in items):
			continue
		session = Session(relpath, root, bindir, mark)
		print(f'=== {relpath}', flush=True)
		try:
			for item in items:
				if item[0] == 'hidden':
					session.run(item[1], item[2], hidden=True)
				elif item[0] == 'wait':
					session.wait(item[1], item[2])
				elif item[0] == 'file':
					session.write(item[1], item[2], item[3])
				elif item[0] == 'skip':
					print(f'{relpath}:{item[1]}: skipped ({item[3]}): {one_line(item[2])}', flush=True)
				else:
					_, line, text, shown, expect = item
					key = (relpath, one_line(text))
					if key in exempt:
						used.add(key)
						print(f'{relpath}:{line}: exempt ({exempt[key][0]}): {one_line(text)}', flush=True)
						continue
					output = session.run(line, text, expect)
					ran += 1
					if key in CHECKS and not re.search(CHECKS[key], output, re.MULTILINE):
						fail(f'{relpath}:{line}: `{text}` does not show /{CHECKS[key]}/:\n{output}')
		finally:
			session.finish()
			kill_marked(mark)
			# What a document's set-up mounted (a staged install over /usr/local, say) ends with it.
			for target in reversed([m for m in mount_points() if m not in mounts]):
				subprocess.run(['umount', '--lazy', target], check=True)
			# The next document starts from empty /tmp and /run/malleo, as on a fresh machine.
			for directory in ('/tmp', '/run/malleo'):
				for entry in os.listdir(directory):
					path = os.path.join(directory, entry)
					# Never the source or build trees bound back under /tmp (nor the directories holding them).
					if path != root and not any(t == path or t.startswith(path + '/') for t in TREES):
						shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
	print(f'PASS: {ran} commands run, {len(exempt)} exempt ({checked} benchmark commands checked against drift), in '
	      f'{time.monotonic() - started:.0f} s', flush=True)


def main():
	if os.environ.get('MALLEO_DOCS_TEST_NAMESPACE') == '1':
		inside_namespace()
		return
	if os.geteuid() != 0:
		print('SKIP: needs root for a mount namespace of its own (private /tmp and /run/malleo)')
		sys.exit(77)
	env = dict(os.environ, MALLEO_DOCS_TEST_NAMESPACE='1')
	sys.exit(subprocess.run(['unshare', '--mount', '--propagation', 'private', sys.executable,
				 os.path.abspath(__file__)], env=env).returncode)


if __name__ == '__main__':
	main()
