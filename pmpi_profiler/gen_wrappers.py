#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write libmalleo_pmpi's wrappers from mpi_functions.list and the configured MPI's mpi.h.

The list says what each function means to the profiler (its roles); mpi.h says how the configured MPI spells it.
Reading the prototypes from the preprocessed header, rather than keeping our own copy, is what lets one list serve
Open MPI and MPICH: const-ness follows the header and a function the MPI does not declare (MPI-4 persistent
collectives or `_c` large-count variants in Open MPI 4.1) is left out instead of failing to compile.

Outputs: function_table.h (ids, names, classes), wrappers_c.cpp and, with --fortran, wrappers_fortran.cpp.
"""

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field

CLASSES = ['init', 'p2p', 'probe', 'wait', 'coll', 'rma', 'comm', 'group', 'other']
ROLE_ARITY = {
    'init': 0, 'finalize': 0, 'abort': 0,
    'send': 4, 'persist': 1, 'rma': 2,
    'comm_out': 1, 'comm_free': 1,
    'start': 1, 'startall': 2, 'request_free': 1, 'sample_time': 0,
    'coll_none': 0, 'coll_root': 4, 'coll_all': 2,
    'coll_gather': 6, 'coll_gatherv': 6, 'coll_scatter': 4, 'coll_scatterv': 4,
    'coll_alltoall': 6, 'coll_alltoallv': 6, 'coll_alltoallw': 6,
    'coll_reduce_scatter': 3, 'coll_reduce_scatter_block': 3,
    'coll_ngather': 6, 'coll_nalltoall': 6, 'coll_nalltoallv': 6, 'coll_nalltoallw': 6,
}


@dataclass
class Param:
    ctype: str  # as declared, without the array suffix
    name: str
    suffix: str = ''  # "[]", "[][3]"

    @property
    def is_array(self):
        return bool(self.suffix)


@dataclass
class Function:
    name: str
    cls: str
    roles: list = field(default_factory=list)  # [(role, [arg, ...])]
    params: list = field(default_factory=list)
    ret: str = 'int'


def parse_list(path):
    functions = []
    for lineno, raw in enumerate(open(path, encoding='utf-8'), 1):
        line = raw.split('#', 1)[0].strip()
        if not line:
            continue
        words = line.split()
        name, cls, rest = words[0], words[1], words[2:]
        if cls not in CLASSES:
            sys.exit(f'{path}:{lineno}: unknown class {cls}')
        large = '+c' in rest
        roles = []
        for word in rest:
            if word == '+c':
                continue
            m = re.fullmatch(r'(\w+)(?:\(([\w,|]*)\))?', word)
            if not m or m.group(1) not in ROLE_ARITY:
                sys.exit(f'{path}:{lineno}: bad role {word}')
            args = [a for a in (m.group(2) or '').split(',') if a]
            if len(args) != ROLE_ARITY[m.group(1)]:
                sys.exit(f'{path}:{lineno}: {m.group(1)} takes {ROLE_ARITY[m.group(1)]} arguments')
            roles.append((m.group(1), args))
        functions.append(Function(name, cls, roles))
        if large:
            functions.append(Function(name + '_c', cls, list(roles)))
    return functions


def preprocess_header(cc, include_dirs):
    cmd = list(cc) + ['-E', '-P', '-x', 'c', '-'] + [f'-I{d}' for d in include_dirs]
    return subprocess.run(cmd, input='#include <mpi.h>\n', capture_output=True, text=True, check=True).stdout


def split_params(text):
    params, depth, cur = [], 0, ''
    for ch in text:
        if ch == ',' and depth == 0:
            params.append(cur)
            cur = ''
            continue
        depth += ch in '(['
        depth -= ch in ')]'
        cur += ch
    params.append(cur)
    return [p.strip() for p in params if p.strip() and p.strip() != 'void']


def parse_param(text):
    text = ' '.join(text.split())
    m = re.fullmatch(r'(.*?[\s*])(\w+)\s*((?:\[\w*\]\s*)*)', text)
    if not m:
        return None
    ctype = m.group(1).strip().replace(' *', '*').replace('*', ' *').replace('  ', ' ')
    return Param(ctype, m.group(2), m.group(3).replace(' ', ''))


def find_prototypes(header_text):
    """Map every declared MPI_ function to (return type, [Param]); None where we cannot parse it."""
    protos = {}
    for m in re.finditer(r'\b(int|double)\s+(P?MPI_\w+)\s*\(', header_text):
        start, depth, i = m.end(), 1, m.end()
        while depth and i < len(header_text):
            depth += header_text[i] == '('
            depth -= header_text[i] == ')'
            i += 1
        params = [parse_param(p) for p in split_params(header_text[start:i - 1])]
        protos[m.group(2)] = (m.group(1), None if None in params else params)
    return protos


# ---------------------------------------------------------------------------------------------------------------
# Expressions for one argument, in the C wrapper and in the Fortran one (where every argument is a pointer to a
# Fortran value and handles have to be converted before the shared C-side recording code can use them).

F2C = {'MPI_Comm': 'PMPI_Comm_f2c', 'MPI_Datatype': 'PMPI_Type_f2c', 'MPI_Request': 'PMPI_Request_f2c',
       'MPI_Win': 'PMPI_Win_f2c'}


def base_type(ctype):
    return ctype.replace('const ', '').replace('*', '').strip()


def param(fn, name):
    """The parameter a role names; `a|b` accepts either spelling, as the MPIs do not always agree."""
    p = next((p for p in fn.params if p.name in name.split('|')), None)
    if p is None:
        raise KeyError(f'{fn.name}: no parameter named {name}')
    return p


def value(fn, name, fortran, deref_out=False):
    p = param(fn, name)
    name = p.name
    pointer = p.is_array or '*' in p.ctype
    base = base_type(p.ctype)
    if not fortran:
        return f'*{name}' if deref_out else name
    if base == 'void':
        return name
    if p.is_array or (pointer and not deref_out):
        if base in F2C:
            return f'malleo::pmpi::FortranHandles<{base}>{{{name}}}'
        return f'reinterpret_cast<const int *>({name})'
    if base in F2C:
        return f'{F2C[base]}(*{name})'
    return f'static_cast<int>(*{name})'


def in_place(name, fortran):
    return f'malleo::pmpi::isFortranInPlace({name})' if fortran else f'({name} == MPI_IN_PLACE)'


def role_code(fn, fid, fortran):
    """Return (before, after) statements for the roles of fn. `ts` is the thread's counters, `ret` the result."""
    before, after = [], []
    roles = dict(fn.roles)
    persist = 'persist' in roles
    v = lambda n, out=False: value(fn, n, fortran, out)  # noqa: E731

    def keep(kind, peer, bytes_expr):
        req = v(roles['persist'][0], True)
        after.append(f'if (ret == MPI_SUCCESS) malleo::pmpi::rememberPersistent(ts, {fid}, {kind}, {peer}, '
                     f'{bytes_expr}, {req});')

    for role, args in fn.roles:
        if role == 'init':
            after.append('malleo::pmpi::onInit();')
        elif role == 'finalize':
            before.append('malleo::pmpi::onFinalize();')
            after.append('malleo::pmpi::releaseRetiredComms();')
        elif role == 'abort':
            before.append('malleo::pmpi::onAbort();')
        elif role == 'send':
            count, dtype, peer, comm = (v(a) for a in args)
            if persist:
                keep('malleo::pmpi::OpKind::P2p', f'malleo::pmpi::worldPeer({comm}, {peer})',
                     f'malleo::pmpi::messageBytes({count}, {dtype})')
            else:
                after.append(f'malleo::pmpi::recordSend(ts, {fid}, {count}, {dtype}, {peer}, {comm});')
        elif role.startswith('coll_'):
            shape = role[len('coll_'):]
            call_args = []
            for a in args:
                p = param(fn, a)
                call_args.append(in_place(p.name, fortran) if base_type(p.ctype) == 'void' else v(a))
            bytes_expr = f'malleo::pmpi::collBytes_{shape}({", ".join(call_args)})'
            if persist:
                keep('malleo::pmpi::OpKind::Coll', '-1', bytes_expr)
            else:
                after.append(f'malleo::pmpi::recordColl(ts, {fid}, {bytes_expr});')
        elif role == 'rma':
            after.append(f'malleo::pmpi::recordRma(ts, {fid}, malleo::pmpi::messageBytes({v(args[0])}, '
                         f'{v(args[1])}));')
        elif role == 'comm_out':
            after.append(f'if (ret == MPI_SUCCESS) malleo::pmpi::rememberComm({v(args[0], True)});')
        elif role == 'comm_free':
            before.append(f'const MPI_Comm freed = {v(args[0], True)};')
            after.append('if (ret == MPI_SUCCESS) malleo::pmpi::forgetComm(freed);')
        elif role == 'start':
            after.append(f'if (ret == MPI_SUCCESS) malleo::pmpi::onStart(ts, {v(args[0], True)});')
        elif role == 'startall':
            n, reqs = args[0], param(fn, args[1]).name
            elem = f'PMPI_Request_f2c({reqs}[i])' if fortran else f'{reqs}[i]'
            after.append(f'if (ret == MPI_SUCCESS) for (int i = 0; i < {v(n)}; ++i) '
                         f'malleo::pmpi::onStart(ts, {elem});')
        elif role == 'request_free':
            before.append(f'const MPI_Request freed = {v(args[0], True)};')
            after.append('if (ret == MPI_SUCCESS) malleo::pmpi::forgetPersistent(ts, freed);')
    return before, after


# MPI_Abort names MPI_COMM_WORLD to end the whole job, parked processes included: never substituted.
KEEP_WORLD = {'MPI_Abort'}


def world_params(fn):
    """The by-value communicator arguments in which MPI_COMM_WORLD is replaced by the malleable world."""
    if fn.name in KEEP_WORLD:
        return []
    return [p.name for p in fn.params if p.ctype == 'MPI_Comm' and not p.is_array]


def c_wrapper(fn, fid):
    decl = ', '.join(f'{p.ctype} {p.name}{p.suffix}' for p in fn.params)
    args = ', '.join(p.name for p in fn.params)
    before, after = role_code(fn, fid, fortran=False)
    before = [f'{name} = malleo::pmpi::currentWorld({name});' for name in world_params(fn)] + before
    return WRAPPER.format(ret=fn.ret, name=fn.name, decl=decl or 'void', real=f'P{fn.name}({args})', fid=fid,
                          args=args, before=indent(before), after=indent(after))


def fortran_params(fn):
    """The Fortran binding's C-level parameters, or None where the mapping is not mechanical."""
    out = []
    for p in fn.params:
        base = base_type(p.ctype)
        if base == 'void':
            out.append(('void *', p.name))
        elif base == 'char' or '(' in p.ctype or base.endswith('_function'):
            return None  # strings carry hidden lengths; callbacks are not data-moving calls
        elif base in ('MPI_Aint', 'MPI_Offset', 'MPI_Count'):
            out.append((f'{base} *', p.name))
        else:
            out.append(('MPI_Fint *', p.name))
    return out + [('MPI_Fint *', 'ierr')]


def fortran_wrapper(fn, fid):
    lower = fn.name.lower()
    if fn.name == 'MPI_Init':
        params = [('MPI_Fint *', 'ierr')]
    elif fn.name == 'MPI_Init_thread':
        params = [('MPI_Fint *', 'required'), ('MPI_Fint *', 'provided'), ('MPI_Fint *', 'ierr')]
    else:
        params = fortran_params(fn)
        if params is None:
            return None
    before, after = role_code(fn, fid, fortran=True) if fn.name not in ('MPI_Init', 'MPI_Init_thread') \
        else ([], ['malleo::pmpi::onInit();'])
    # A substituted communicator is a local copy of the handle: the parameter is renamed and `name` points at it.
    substituted = set(world_params(fn)) if fn.name not in ('MPI_Init', 'MPI_Init_thread') else set()
    decl = ', '.join(f'{t}{n}_given' if n in substituted else f'{t}{n}' for t, n in params)
    prologue = ''.join(f'    MPI_Fint {n}_value = malleo::pmpi::currentWorldFortran(*{n}_given);\n'
                       f'    MPI_Fint *{n} = &{n}_value;\n' for _, n in params if n in substituted)
    args = ', '.join(n for _, n in params)
    text = FORTRAN_WRAPPER.format(name=f'{lower}_', real=f'p{lower}_', decl=decl, prologue=prologue,
                                  types=', '.join(t for t, _ in params), args=args,
                                  fid=fid, before=indent(before), after=indent(after))
    # gfortran and the other compilers Open MPI supports spell the same entry point in these four ways.
    return text + ''.join(f'MALLEO_EXPORT void {alias}({decl}) __attribute__((alias("{lower}_")));\n'
                          for alias in (lower, lower + '__', fn.name.upper())) + '\n'


FORTRAN_WRAPPER = '''MALLEO_EXPORT void {name}({decl})
{{
{prologue}    static std::atomic<void *> real{{nullptr}};
    const auto call = reinterpret_cast<void (*)({types})>(malleo::pmpi::fortranEntry(real, "{real}"));
    if (malleo::pmpi::bypassWrappers()) [[unlikely]] {{
        call({args});
        return;
    }}
    malleo::pmpi::ThreadCounters *ts = malleo::pmpi::enterCall();
    if (ts->depth > 1) {{
        call({args});
        --ts->depth;
        return;
    }}
{before}    const bool timed = malleo::pmpi::timeThisCall(ts, {fid});
    const uint64_t t0 = timed ? malleo::pmpi::ticks() : 0;
    call({args});
    malleo::pmpi::countCall(ts, {fid}, timed, t0);
    const int ret = *ierr;
{after}    (void)ret;
    --ts->depth;
}}
'''


# The exported function only tests the mode and tail-calls either PMPI or the profiling body: kept apart (noinline),
# the body's register saves stay off the MALLEO_PROFILE=off path.
WRAPPER = '''static __attribute__((noinline)) {ret} profiled_{name}({decl})
{{
    malleo::pmpi::ThreadCounters *ts = malleo::pmpi::enterCall();
    if (ts->depth > 1) {{
        const {ret} ret = {real};
        --ts->depth;
        return ret;
    }}
{before}    const bool timed = malleo::pmpi::timeThisCall(ts, {fid});
    const uint64_t t0 = timed ? malleo::pmpi::ticks() : 0;
    const {ret} ret = {real};
    malleo::pmpi::countCall(ts, {fid}, timed, t0);
{after}    --ts->depth;
    return ret;
}}

MALLEO_EXPORT {ret} {name}({decl})
{{
    if (malleo::pmpi::bypassWrappers()) [[unlikely]]
        return {real};
    return profiled_{name}({args});
}}

'''


def indent(lines):
    return ''.join(f'    {line}\n' for line in lines)


HEADER = '''// SPDX-License-Identifier: Apache-2.0
// Generated by gen_wrappers.py from mpi_functions.list: do not edit.
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--list', required=True)
    ap.add_argument('--include-dir', action='append', default=[])
    ap.add_argument('--fortran', action='store_true', help='also wrap the Fortran entry points')
    ap.add_argument('--table', required=True)
    ap.add_argument('--c-out', required=True)
    ap.add_argument('--fortran-out', required=True)
    ap.add_argument('cc', nargs='+', help='the C compiler command, used to preprocess mpi.h')
    opts = ap.parse_args()

    protos = find_prototypes(preprocess_header(opts.cc, opts.include_dir))
    functions = []
    for fn in parse_list(opts.list):
        if fn.name not in protos or f'P{fn.name}' not in protos:
            continue  # not declared by this MPI: that is the point of reading its header
        fn.ret, fn.params = protos[fn.name]
        if fn.params is None:
            sys.exit(f'cannot parse the prototype of {fn.name}')
        functions.append(fn)

    with open(opts.table, 'w', encoding='utf-8') as out:
        out.write(HEADER + '#pragma once\n\n#include <cstdint>\n\nnamespace malleo::pmpi {\n\n')
        out.write(f'inline constexpr int kFunctionCount = {len(functions)};\n\n')
        out.write('enum class FunctionClass : uint8_t {\n')
        out.write(''.join(f'    {c.capitalize()},\n' for c in CLASSES) + '};\n\n')
        out.write('struct FunctionInfo {\n    const char *name;\n    FunctionClass cls;\n'
                  '    bool polling; // role sample_time: timing is sampled from the first call\n};\n\n')
        out.write('inline constexpr FunctionInfo kFunctions[kFunctionCount] = {\n')
        out.write(''.join(f'    {{"{fn.name}", FunctionClass::{fn.cls.capitalize()}, '
                          f'{"true" if "sample_time" in dict(fn.roles) else "false"}}},\n' for fn in functions))
        out.write('};\n\n')
        out.write(''.join(f'inline constexpr int kFn_{fn.name} = {i};\n' for i, fn in enumerate(functions)))
        out.write('\n} // namespace malleo::pmpi\n')

    prologue = HEADER + '\n#include <atomic>\n\n#include "lifecycle.h"\n#include "wrapper_support.h"\n\nextern "C" {\n\n'
    with open(opts.c_out, 'w', encoding='utf-8') as out:
        out.write(prologue)
        errors = []
        for i, fn in enumerate(functions):
            try:
                out.write(c_wrapper(fn, i))
            except KeyError as err:
                errors.append(err.args[0])
        if errors:
            sys.exit('mpi_functions.list names parameters that mpi.h does not:\n  ' + '\n  '.join(errors))
        out.write('} // extern "C"\n')

    with open(opts.fortran_out, 'w', encoding='utf-8') as out:
        out.write(prologue)
        if opts.fortran:
            for i, fn in enumerate(functions):
                if fn.name.endswith('_c'):
                    continue  # large-count variants have no mpif.h binding
                text = fortran_wrapper(fn, i)
                if text:
                    out.write(text)
        out.write('} // extern "C"\n')


if __name__ == '__main__':
    main()
