"""Guards on the Python state a traced function reads, and graph breaks for what cannot be
guarded.

A program replays the operations its trace recorded; any Python value the trace read along the
way (a global float, a closure variable, an attribute of a config object, an item of a list, a
module's hyper-parameter or Parameter) was baked into it. So while a function is traced, a
trace function (``Watch``) notes every Python function that runs outside tracegrad and the
libraries it trusts, and the C functions its bytecode loads. Afterwards ``guards_for`` reads
their bytecode for the globals, closure cells and attribute names they load, and turns what
those name into guards:

- scalars, strings and small tuples, lists and dicts by value, floats compared by bits (so that
  ``-0.0`` is not ``0.0`` and a NaN matches itself);
- tensors, functions, classes and other objects by identity, plus the attributes of plain
  objects (and of the user's own Python modules) whose names the traced code loads;
- ``tg.nn.Module`` state (attributes, parameters, buffers, submodules, hooks) through one
  epoch counter that every change to any module bumps (``bump``): the common call compares one
  integer; after a change, the modules the program read are compared with their snapshot.

Calls whose result differs from call to call (``random``, ``numpy.random``, ``time``,
``os.urandom``...) break the graph, as do assignments to globals or outer closure variables
(a program would not repeat them). The checks are generated as straight-line Python
(``PyGuard.inline``) and inlined into each program's guard check (fastpath.py).

>>> import tracegrad as tg
>>> K = 2.0
>>> f = tg.compile(lambda x: x * K, backend="interpreter")
>>> f(tg.ones(1))
tensor([2.])
>>> K = 5.0
>>> f(tg.ones(1))
tensor([5.])
"""
from __future__ import annotations

import builtins
import dis
import functools
import gc
import itertools
import operator
import os
import re
import random
import struct
import sys
import types

from ...core.tracing import STATE_EPOCH, bump, library_file as _trusted_file  # noqa: F401  (re-exported)

MISSING = type("Missing", (), {"__repr__": lambda self: "<missing>"})()

_MAX_ITEMS = 16  # containers up to this size are guarded item by item, larger ones by identity
_MAX_DEPTH = 3  # how deep guards follow items and attributes
_TMP = itertools.count()


# ----------------------------------------------------------------------------- what is trusted
# libraries whose module-level names are their own constants, not state of the user's program
_TRUSTED_PACKAGES = frozenset({"tracegrad", "numpy", "ml_dtypes", "jinja2", "cffi", "networkx",
                               "filelock", "scipy", "torch", "jax", "_pytest", "pytest", "pluggy",
                               "hypothesis", "typing_extensions", "markupsafe"})
# Python-level sources of values that differ from call to call
_NONDETERMINISTIC_FILES = frozenset(
    os.path.abspath(m.__file__) for m in (__import__("random"), __import__("secrets"),
                                          __import__("uuid"), __import__("tempfile"))
)
_NONDETERMINISTIC_BUILTINS = {
    ("time", name) for name in ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                                "monotonic_ns", "process_time", "process_time_ns", "thread_time",
                                "thread_time_ns", "localtime", "gmtime", "ctime", "asctime",
                                "strftime")
} | {("posix", "urandom"), ("nt", "urandom"), ("posix", "getrandom"), ("posix", "getpid"),
     ("_random", "random"), ("_random", "getrandbits")}


def _trusted_globals(globs):
    name = globs.get("__name__") or ""
    return name.partition(".")[0] in _TRUSTED_PACKAGES


def _trusted_code(filename, globs):
    """Code whose module-level names are constants of a library, not the user's state: from
    tracegrad, the standard library or a trusted package's own files (code the user runs
    through exec or doctest, named ``<...>``, is the user's even in a trusted namespace)."""
    if _trusted_file(filename):
        return True
    return not filename.startswith("<") and _trusted_globals(globs)


def _nondeterministic_builtin(fn):
    """A reason when C function ``fn`` returns a different value at every call, else None."""
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        cls = type(owner)
        mod = getattr(cls, "__module__", "") or ""
        if mod.startswith("numpy.random"):
            return f"{mod}.{cls.__name__}.{getattr(fn, '__name__', '?')}()"
        if isinstance(owner, random.Random):
            return f"random.{getattr(fn, '__name__', '?')}()"
        return None
    mod = getattr(fn, "__module__", None) or getattr(owner, "__name__", None)
    name = getattr(fn, "__name__", None)
    if (mod, name) in _NONDETERMINISTIC_BUILTINS:
        return f"{'os' if mod in ('posix', 'nt') else mod}.{name}()"
    if mod and mod.startswith("numpy.random"):
        return f"numpy.random.{name}()"
    return None


# ----------------------------------------------------------------------------- watching a trace
_NONDET = 2  # a code object of _NONDETERMINISTIC_FILES, in Watch._seen


class Watch:
    """While active (a context manager around the traced call), records the user code that runs
    (``codes``: code object -> its globals) and the reasons the trace cannot be replayed
    (``breaks``: (reason, "file:line: source")).

    A trace function (``sys.settrace``) sees each new Python frame once, which costs a third of
    what a profile hook's call, return and C-call events cost. C functions the user's code calls
    (``time.time``, ``np.random.rand``) are found in its bytecode instead (``_scan_calls``). A trace
    function already set (a debugger, coverage) keeps receiving every event through this one."""

    def __init__(self, objects=()):
        self.codes = {}
        self.breaks = []
        self._seen = {}  # code -> True (user code), False (trusted) or _NONDET
        self._previous = None
        # guards on the state each user code reads, made before it first runs (and on the
        # object arguments): compared after the trace, they tell what the trace changed
        self.objects = list(objects)
        self.before = [_constant_guard(desc, obj, _all_attrs(obj)) for desc, obj in self.objects]
        self._before_seen = set()

    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        return False

    def _trace(self, frame, event, arg):
        code = frame.f_code
        kind = self._seen.get(code)
        if kind is None:
            kind = self._seen[code] = self._classify(frame, code)
            if kind is True:
                self.codes.setdefault(code, frame.f_globals)
                self._scan_writes(frame, code)
                self._scan_calls(frame, code)
                self.before += code_guards(code, frame.f_globals, None, code_reads(code)[2],
                                           self._before_seen)
        if kind is _NONDET:
            caller = frame.f_back
            # only the user's own calls: a gc callback or a library may draw its own numbers
            if caller is not None and self._seen.get(caller.f_code) is True:
                module = os.path.splitext(os.path.basename(code.co_filename))[0]
                self._break(f"{module}.{code.co_name}() returns a new value at every call; a "
                            "compiled program would repeat the value it returned while tracing",
                            caller)
        previous = self._previous
        return previous(frame, event, arg) if previous is not None else None

    def _classify(self, frame, code):
        filename = code.co_filename
        if os.path.abspath(filename) in _NONDETERMINISTIC_FILES:
            return _NONDET
        return not _trusted_code(filename, frame.f_globals)

    def _scan_writes(self, frame, code):
        """Break before the code runs when it assigns a global or an outer variable: a program
        would not repeat the assignment, and breaking later would make the first call assign
        twice (once tracing, once running eagerly)."""
        _, _, _, store_g, store_free = code_reads(code)
        for what, names in (("the global", store_g), ("the outer variable", store_free)):
            for name in sorted(names):
                self._break(f"{code.co_name} assigns {what} {name}; a compiled program would not "
                            "repeat the assignment", frame, code.co_firstlineno)

    def _scan_calls(self, frame, code):
        """Break on a nondeterministic C function that this user code loads to call."""
        for fn, lineno in _loaded_callables(frame, code):
            reason = _nondeterministic_builtin(fn)
            if reason is not None:
                self._break(f"{reason} returns a new value at every call; a compiled program "
                            "would repeat the value it returned while tracing", frame, lineno)

    def _break(self, reason, frame, lineno=None):
        where = _user_frame_location(frame, lineno)
        self.breaks.append((reason, where))
        # raised here too so that the trace stops; recorded first in case code in between
        # catches the exception
        from ...core.tracing import GraphBreak

        raise GraphBreak(reason, where)


_LOADS = ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF", "LOAD_CLASSDEREF")


def _loaded_callables(frame, code):
    """(object, line) for each chain ``name.attr.attr`` the code loads (``np.random.rand``,
    ``time.time``, ``self.rng.random``), resolved against the frame's globals, builtins and
    arguments; attributes are read only where that runs no user code (modules and classes, or
    an instance's own dict and its class's plain functions)."""
    import inspect

    globs, local = frame.f_globals, frame.f_locals
    out, obj, line = [], MISSING, None
    for ins in dis.get_instructions(code):
        if ins.starts_line is not None:
            line = ins.starts_line
        op = ins.opname
        if op in _LOADS and isinstance(ins.argval, str):
            name = ins.argval
            if op in ("LOAD_GLOBAL", "LOAD_NAME"):
                obj = globs.get(name, getattr(builtins, name, MISSING))
            else:
                obj = local.get(name, MISSING)
        elif op in ("LOAD_ATTR", "LOAD_METHOD") and obj is not MISSING:
            if isinstance(obj, (types.ModuleType, type)):
                obj = getattr(obj, ins.argval, MISSING)
            else:
                try:
                    found = inspect.getattr_static(obj, ins.argval)
                except AttributeError:
                    obj = MISSING
                else:  # a builtin method on the class: bind it to see its owner
                    obj = getattr(obj, ins.argval, MISSING) \
                        if isinstance(found, (types.MethodDescriptorType,
                                              types.BuiltinFunctionType,
                                              types.WrapperDescriptorType)) else found
        else:
            obj = MISSING
            continue
        if callable(obj) and obj is not MISSING:
            out.append((obj, line))
    return out


def _user_frame_location(frame, lineno=None):
    import linecache

    while frame is not None and _trusted_file(frame.f_code.co_filename):
        frame, lineno = frame.f_back, None
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    lineno = lineno or frame.f_lineno
    line = linecache.getline(filename, lineno).strip()
    return f"{os.path.basename(filename)}:{lineno}: {line}"


# ----------------------------------------------------------------------------- reading bytecode
@functools.lru_cache(maxsize=4096)
def code_reads(code):
    """(global names loaded, free variables loaded, attribute names loaded, global names
    stored, free variables stored) of one code object (nested code objects are separate: they
    run as their own functions and are watched themselves)."""
    globals_, free, attrs, store_g, store_free = set(), set(), set(), set(), set()
    freevars = set(code.co_freevars)
    for ins in dis.get_instructions(code):
        op, val = ins.opname, ins.argval
        if op in ("LOAD_GLOBAL", "LOAD_NAME"):
            globals_.add(val)
        elif op in ("LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE") and val in freevars:
            free.add(val)
        elif op in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR") and isinstance(val, str):
            attrs.add(val)
        elif op in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            store_g.add(val)
        elif op in ("STORE_DEREF", "DELETE_DEREF") and val in freevars:
            store_free.add(val)
    return (frozenset(globals_), frozenset(free), frozenset(attrs), frozenset(store_g),
            frozenset(store_free))


def _functions_of(code, top):
    """The function objects running ``code``: ``top`` when it is one of them, else found among
    the live objects (only for code with closure cells, whose cells are in the function)."""
    if top is not None and getattr(top, "__code__", None) is code:
        return [top]
    return [f for f in gc.get_referrers(code)
            if isinstance(f, types.FunctionType) and f.__code__ is code]


# ----------------------------------------------------------------------------- guard code
def float_bits(x):
    return struct.pack("<d", x)


def complex_bits(x):
    return struct.pack("<dd", x.real, x.imag)


class _Code:
    """A condition being generated: constants named through ``const`` (a fastpath._Source's, or
    this class's own), temporaries numbered."""

    def __init__(self, const):
        self.const = const

    def tmp(self, expr):
        name = f"_t{next(_TMP)}"  # unique across the conditions inlined into one function
        return name, f"({name} := {expr})"


def _is_module(v):
    from ...nn.modules.module import Module

    return isinstance(v, Module)


def _plain_object(v):
    """An instance of a user class holding data in its __dict__ (a config, a wrapper...)."""
    if isinstance(v, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                      types.ModuleType, functools.partial)):
        return False
    d = getattr(v, "__dict__", None)
    return isinstance(d, dict) and not _trusted_globals({"__name__": type(v).__module__})


def value_cond(code, expr, v, attrs, modules, depth=0):
    """Python source of a condition: ``expr`` (evaluated once) still holds what ``v`` held
    when traced. ``attrs``: attribute names the traced code loads (followed on plain objects
    and user modules); ``modules``: tg.nn.Modules found, collected for the epoch guard."""
    c = code.const
    t = type(v)
    if v is None or t is bool or v is MISSING:
        return f"{expr} is {c(v)}"
    if t in (int, str, bytes):
        name, bind = code.tmp(expr)
        return f"type({bind}) is {c(t)} and {name} == {c(v)}"
    if t is float:
        name, bind = code.tmp(expr)
        if v != v or v == 0.0:  # NaN, -0.0 and 0.0: compared by bits
            return f"type({bind}) is {c(float)} and {c(float_bits)}({name}) == {c(float_bits(v))}"
        return f"type({bind}) is {c(float)} and {name} == {c(v)}"
    if t is complex:
        name, bind = code.tmp(expr)
        return f"type({bind}) is {c(complex)} and {c(complex_bits)}({name}) == {c(complex_bits(v))}"
    name, bind = code.tmp(expr)
    ident = f"{bind} is {c(v)}"
    if depth >= _MAX_DEPTH:
        return ident
    if t in (tuple, list):
        if len(v) > _MAX_ITEMS:  # every item still the same object: one C loop
            snap = c(tuple(v))
            return (f"type({bind}) is {c(t)} and len({name}) == {len(v)} and "
                    f"all(map({c(operator.is_)}, {name}, {snap}))")
        parts = [f"type({bind}) is {c(t)}", f"len({name}) == {len(v)}"]
        parts += [value_cond(code, f"{name}[{i}]", x, attrs, modules, depth + 1) for i, x in enumerate(v)]
        return " and ".join(f"({p})" for p in parts)
    if t is dict:
        keys = list(v)
        simple = all(type(k) in (str, int, bool, float, tuple, type(None)) for k in keys)
        if len(v) > _MAX_ITEMS or not simple:
            return (f"type({bind}) is {c(dict)} and len({name}) == {len(v)} and "
                    f"all(map({c(operator.is_)}, {name}.values(), {c(tuple(v.values()))})) and "
                    f"list({name}) == {c(keys)}")
        parts = [f"type({bind}) is {c(dict)}", f"len({name}) == {len(v)}"]
        parts += [value_cond(code, f"{name}.get({c(k)}, {c(MISSING)})", x, attrs, modules, depth + 1)
                  for k, x in v.items()]
        return " and ".join(f"({p})" for p in parts)
    if _is_module(v):
        modules.append(v)
        return ident
    followed = None
    if isinstance(v, types.ModuleType) and not _trusted_globals(vars(v)) \
            and not _trusted_file(getattr(v, "__file__", None) or "<builtin>"):
        followed = vars(v)  # the user's own Python module: its names read as attributes
    elif _plain_object(v):
        followed = v.__dict__
    if not followed:
        return ident
    parts = [ident]
    for a in sorted(attrs & followed.keys()):
        parts.append(value_cond(code, f"{name}.__dict__.get({c(a)}, {c(MISSING)})", followed[a],
                                attrs, modules, depth + 1))
    return " and ".join(f"({p})" for p in parts)


class PyGuard:
    """One guard on Python state: ``desc`` names it (``global K``), ``root(names)`` is source
    reading the current value given the names of ``root_consts``, ``value`` what the trace
    saw. The condition is generated at once, so that it holds the state as traced (items and
    attributes included); ``inline(const)`` gives its source with constants named by
    ``const`` (fastpath's), ``check()`` runs it alone and ``reason()`` says what changed."""

    def __init__(self, desc, root, root_consts, value, attrs):
        self.desc, self.value, self.attrs = desc, value, frozenset(attrs)
        self.modules = []
        self._consts = []

        def placeholder(obj):
            self._consts.append(obj)
            return f"@@{len(self._consts) - 1}@@"

        root_src = root({k: placeholder(v) for k, v in root_consts.items()})
        self._src = value_cond(_Code(placeholder), root_src, value, self.attrs, self.modules)
        self._now_src = root_src
        # (whether the condition reads attributes: a plain object's or a user module's)
        self.follows_attributes = ".__dict__.get(" in self._src

    # compiled on first use: most guards are only ever inlined into a program's check
    @functools.cached_property
    def check(self):
        ns = {}
        return _compile(f"lambda: ({self.inline(_own_const(ns))})", ns)

    @functools.cached_property
    def now(self):
        ns = {}
        return _compile(f"lambda: {self._named(self._now_src, _own_const(ns))}", ns)

    def _named(self, src, const):
        names = [const(obj) for obj in self._consts]
        return re.sub(r"@@(\d+)@@", lambda m: names[int(m.group(1))], src)

    def inline(self, const):
        return self._named(self._src, const)

    def reason(self):
        try:
            now = self.now()
        except Exception:  # (an emptied cell: any reason will do)
            now = MISSING
        return f"{self.desc} changed: it was {_short(self.value)}, now {_short(now)}"


def _own_const(ns):
    def const(obj):
        name = f"k{len(ns)}"
        ns[name] = obj
        return name
    return const


def _compile(src, ns):
    return eval(compile(src, "<tracegrad guard>", "eval"), ns)  # (generated here)


def _short(v):
    if isinstance(v, (int, float, complex, str, bytes, bool, type(None))):
        r = repr(v)
        return r if len(r) <= 60 else r[:57] + "..."
    return f"a {type(v).__name__} object" + ("" if v is MISSING else f" at {id(v):#x}")


# ----------------------------------------------------------------------------- module state
def _state_key(v):
    if type(v) is float:
        return (float, float_bits(v))
    if type(v) is complex:
        return (complex, complex_bits(v))
    if type(v) in (int, str, bytes, bool) or v is None:
        return (type(v), v)
    if isinstance(v, (dict, list, tuple)) and len(v) <= 64:  # (a module's tables are OrderedDicts)
        items = v.items() if isinstance(v, dict) else enumerate(v)
        return (type(v), tuple((k if type(k) in (str, int) else id(k), _state_key(x)) for k, x in items))
    return (object, id(v))


def module_snapshot(modules):
    """What a program read of these modules (each with its submodules): every attribute,
    parameter, buffer, submodule and hook, scalars by value and objects by identity. The
    objects themselves are kept with the snapshot so that their ids stay theirs."""
    seen, out, keep = set(), [], []
    for m in modules:
        for sub in m.modules():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            d = sub.__dict__
            out.append((id(sub), tuple((k, _state_key(v)) for k, v in d.items())))
            keep.append((sub, tuple(d.values()), *(tuple(v.values()) for v in d.values()
                                                   if isinstance(v, dict))))
    return tuple(out), keep


class ModuleStateGuard:
    """The state of the modules a program read is what it was when traced. Per call: one
    comparison of the epoch; after any module changed anywhere, the snapshot is compared
    (and, when equal, the epoch accepted again)."""

    desc = "module state"

    def __init__(self, modules):
        self.modules = list({id(m): m for m in modules}.values())
        self.snapshot, self._keep = module_snapshot(self.modules)
        self.seen = [STATE_EPOCH[0]]

    def revalidate(self):
        if module_snapshot(self.modules)[0] == self.snapshot:
            self.seen[0] = STATE_EPOCH[0]
            return True
        return False

    def check(self):
        return self.seen[0] == STATE_EPOCH[0] or self.revalidate()

    def inline(self, const):
        return f"{const(self.seen)}[0] == {const(STATE_EPOCH)}[0] or {const(self.revalidate)}()"

    def reason(self):
        now = dict(module_snapshot(self.modules)[0])
        for (mid, items), m in zip(self.snapshot, [k[0] for k in self._keep]):
            if now.get(mid) != items:
                before, after = dict(items), dict(now.get(mid, ()))
                changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
                return f"{type(m).__name__} module changed: {', '.join(changed) or 'its state'}"
        return "module state changed"


# ----------------------------------------------------------------------------- building guards
def _all_attrs(obj):
    """Every attribute name of a plain object (what an argument's guard before the trace follows:
    which ones the trace reads is not known yet)."""
    d = getattr(obj, "__dict__", None)
    return frozenset(d) if isinstance(d, dict) else frozenset()


def _constant_guard(desc, obj, attrs):
    """A guard on an object the program holds directly (``self``, an argument already guarded
    by identity): the same object, with the attributes the traced code loads."""
    return PyGuard(desc, lambda n: n["o"], {"o": obj}, obj, attrs)


def guards_for(watch, fn):
    """(guards, modules): the PyGuards on what the code ``watch`` saw run reads, and the
    tg.nn.Modules found (for ModuleStateGuard). ``fn`` is the traced callable (its closure and
    ``self`` are found directly); the object arguments the watch was given (held by identity
    elsewhere) have their attributes guarded here."""
    attrs = set()
    for code in watch.codes:
        attrs |= code_reads(code)[2]
    guards, seen = [], set()
    owner = getattr(fn, "__self__", None)
    if owner is None and not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        owner = fn  # a callable object: its __call__ reads it as self
    if owner is not None and not isinstance(owner, types.ModuleType):
        guards.append(_constant_guard(f"{type(owner).__name__} object (self)", owner, attrs))
    for desc, obj in watch.objects:
        guards.append(_constant_guard(desc, obj, attrs))
    for code, globs in watch.codes.items():
        guards += code_guards(code, globs, getattr(fn, "__func__", fn), attrs, seen)
    modules = [m for g in guards for m in g.modules]
    return guards, modules


def code_guards(code, globs, top, attrs, seen):
    """PyGuards on the globals and closure cells ``code`` loads (with ``globs`` its globals;
    ``top`` a function known to run it; ``attrs`` the attribute names to follow); ``seen``
    (a set shared between calls) keeps each global and cell to one guard."""
    g_names, free = code_reads(code)[:2]
    guards = []
    for name in sorted(g_names):
        if (id(globs), name) in seen:
            continue
        seen.add((id(globs), name))
        if name in globs:
            value = globs[name]
        elif hasattr(builtins, name):
            continue  # a builtin (a global shadowing it later is not guarded: security.md)
        else:
            value = MISSING
        if not _symbolic(value):
            guards.append(PyGuard(f"global {name}",
                                  lambda n, name=name: f"{n['g']}.get({name!r}, {n['m']})",
                                  {"g": globs, "m": MISSING}, value, attrs))
    if not free:
        return guards
    for f in _functions_of(code, top):
        for var, cell in zip(code.co_freevars, f.__closure__ or ()):
            if var not in free or id(cell) in seen:
                continue
            seen.add(id(cell))
            try:
                value = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            if not _symbolic(value):
                guards.append(PyGuard(f"closure variable {var} of {code.co_name}",
                                      lambda n: f"{n['c']}.cell_contents", {"c": cell}, value, attrs))
    return guards


def changed_while_tracing(watch):
    """A reason when Python state the traced code read was different after the trace than
    when that code first ran (it changed it: ``log.append(x)``, ``cfg.calls += 1``), else None.
    A program would not repeat that change."""
    for g in watch.before:
        if not g.check():
            return (f"the function changes {g.desc} (it was {_short(g.value)}, then "
                    f"{_short(g.now())}); a compiled program would not repeat the change")
    return None


def _symbolic(value):
    """A tensor made by the trace itself (a closure of a function defined inside the traced
    one): no state of the user's."""
    from ...core.tensor import Tensor

    return isinstance(value, Tensor) and value._is_traced


def same_value(a, b):
    """``a`` and ``b`` are the same Python value for a guard: the same type and equal, floats
    by bits (``-0.0`` is not ``0.0``; a NaN is itself), tuples item by item."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return float_bits(a) == float_bits(b)
    if type(a) is complex:
        return complex_bits(a) == complex_bits(b)
    if type(a) in (tuple, list):
        return len(a) == len(b) and all(map(same_value, a, b))
    try:
        return bool(a == b)
    except Exception:  # (an object whose == is not a bool: compare identity)
        return a is b
