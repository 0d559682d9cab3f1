"""Aliasing between the tensors a compiled program binds: its flat arguments and the tensors
it lifts (parameters, optimizer state, globals, existing ``.grad`` tensors).

A program is traced as if every bound tensor had memory of its own. That is only right while
no tensor the program writes in place shares memory with another bound tensor: eagerly,
``a.add_(1)`` is seen through ``b`` when ``b`` is ``a`` or a view of it. So:

- the same tensor object passed twice is traced as one tensor (the second argument's symbolic
  tensor *is* the first's), and the program is guarded on that identity;
- every other overlap that involves a written tensor is refused at trace time: such a call
  runs eagerly, with one warning, behind an ``EagerFallback`` entry guarded on that same
  overlap (later calls with that aliasing run eagerly without retracing);
- every program that writes in place carries an ``("alias", AliasGuard)`` state guard: the
  overlaps among its bound tensors that involve a written one must be exactly those seen at
  trace time (normally none), checked at every call. ``fastpath`` generates it as
  straight-line code: an identity test per lifted tensor's array and a root-storage key per
  argument (``id`` of the array's base, or of the array itself), compared with the keys of the
  written tensors; any collision goes to the exact check (``np.shares_memory``).

A result that eager mode returns as a view of an argument or of a lifted tensor is returned
as a view of it too (``view_outputs``): the view function recorded while tracing is applied
to the real tensor after the program's write-backs, so writes through the result reach the
argument and the view shares its base's version counter, as eagerly.
"""
from __future__ import annotations

import numpy as np

from ...core.tracing import GraphBreak

_STORAGE_KINDS = ("arg", "data", "grad", "arg_grad")  # bindings/write-backs into user storage


class AliasFallback(GraphBreak):
    """The call's bound tensors overlap in a way the trace cannot express (an in-place write
    into one of them would be seen through another): this call runs eagerly. ``capture`` is
    the finished trace, whose guards (with its aliasing) select later calls that do the same."""

    def __init__(self, reason, capture):
        super().__init__(reason)
        self.capture = capture


# ---------------------------------------------------------------------------- before tracing
def duplicate_arguments(flat):
    """{j: i} for every flat argument j that is the same Tensor object as an earlier one i."""
    from ...core.tensor import Tensor

    first, out = {}, {}
    for j, x in enumerate(flat):
        if isinstance(x, Tensor):
            i = first.setdefault(id(x), j)
            if i != j:
                out[j] = i
    return out


# ---------------------------------------------------------------------------- overlap
def overlaps(a, b):
    """Whether arrays ``a`` and ``b`` share at least one element (exact where NumPy can tell
    cheaply; a problem too hard to decide counts as an overlap)."""
    if a is b:
        return a.size > 0
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except Exception:  # (NumPy's TooHardError: past max_work, assume they do)
        return True


def overlapping_pairs(arrays):
    """The pairs (p, q), p < q, of ``arrays`` (None entries skipped) whose byte ranges
    overlap: every pair ``np.may_share_memory`` would report, found by sorting the ranges
    (n log n plus the pairs found; testing every pair was quadratic: 33 thousand tests, ~20 ms,
    for the 258 tensors a 128-layer MLP's step binds). ``overlaps`` then decides a pair exactly.

    >>> import numpy as np
    >>> a = np.zeros(8)
    >>> overlapping_pairs([a[:4], np.zeros(3), a[2:], None, a[4:]])
    [(0, 2), (2, 4)]
    """
    from numpy.lib.array_utils import byte_bounds

    def bounds(a):  # (a cuda tensor's DeviceArray gives its device address range itself)
        return byte_bounds(a) if isinstance(a, np.ndarray) else a.byte_bounds()

    spans = sorted((*bounds(a), p) for p, a in enumerate(arrays) if a is not None and a.size)
    out, open_spans = [], []  # open_spans: (end, p) of the spans begun so far that may reach on
    for lo, hi, p in spans:
        open_spans = [(end, q) for end, q in open_spans if end > lo]
        out += [(min(p, q), max(p, q)) for _, q in open_spans]
        open_spans.append((hi, p))
    return sorted(out)


def _array_of(kind, ref, flat):
    """The array a binding of ``kind``/``ref`` reads now (None when a .grad is missing)."""
    if kind == "arg":
        return flat[ref]._value
    if kind == "data":
        return ref._value
    t = flat[ref] if kind == "arg_grad" else ref
    g = t._grad
    return None if g is None else g._value


class AliasGuard:
    """The aliasing a program was traced with. ``refs``: the bound tensors, as (kind, ref)
    with the kinds of ``capture.Binding``; ``written``: positions in ``refs`` the program
    writes in place; ``same``: (j, i) flat arguments traced as one tensor (j is i);
    ``pairs``: the overlapping (written, other) position pairs seen at trace time (empty for a
    compiled program); ``names``: readable names per position."""

    __slots__ = ("refs", "written", "same", "pairs", "names", "arg_names")

    def __init__(self, refs, written, same, pairs, names, arg_names):
        self.refs = refs
        self.written = written
        self.same = same
        self.pairs = pairs
        self.names = names
        self.arg_names = arg_names

    def relation(self, flat):
        """The overlapping pairs (p, q), p < q, of which at least one is written."""
        arrays = [_array_of(kind, ref, flat) for kind, ref in self.refs]
        written = self.written
        return frozenset((p, q) for p, q in overlapping_pairs(arrays)
                         if (p in written or q in written) and overlaps(arrays[p], arrays[q]))

    def mismatch(self, flat):
        """None while the aliasing is the traced one, else why not (for the guards log)."""
        for j, i in self.same:
            if flat[j] is not flat[i]:
                return (f"argument {self.arg_names[j]} is no longer the same tensor as argument "
                        f"{self.arg_names[i]} (traced as one tensor)")
        now = self.relation(flat)
        if now != self.pairs:
            new = sorted(now - self.pairs)
            if new:
                return "aliasing changed: " + self.describe_pairs(new) + " now"
            return "aliasing changed: " + self.describe_pairs(sorted(self.pairs - now)) + " no longer"
        return None

    def describe_pairs(self, pairs):
        return "; ".join(f"{self.names[p]} and {self.names[q]} share memory" for p, q in pairs)

    def describe(self):
        parts = [f"{self.arg_names[j]} is {self.arg_names[i]}" for j, i in self.same]
        if self.pairs:
            parts.append(self.describe_pairs(sorted(self.pairs)))
        else:
            written = ", ".join(self.names[p] for p in sorted(self.written))
            parts.append(f"no memory shared with the tensors written in place ({written})"
                         if written else "no other tensors traced as one")
        return "aliasing: " + "; ".join(parts)

    # ------------------------------------------------------------------ straight-line check
    def fast_lines(self, s, indent="    "):
        """Lines of ``fastpath.compile_check`` for this guard: fall through when it surely
        holds, ``return False`` when it may not (``Program.mismatch`` then decides exactly).
        The keys of lifted tensors are taken now, valid while their arrays are the same
        objects (checked by identity: cheaper than computing them at every call)."""
        L = []
        for j, i in self.same:
            L.append(f"{indent}if flat[{j}] is not flat[{i}]:")
            L.append(f"{indent}    return False")
        if self.pairs:  # an eager fallback's aliasing: always checked exactly
            L.append(f"{indent}return False")
            return L
        if not self.written:
            return L
        static, dynamic = {}, []
        for p, (kind, ref) in enumerate(self.refs):
            if kind == "data":
                a = ref._value
                L.append(f"{indent}if {s.const(ref)}._value is not {s.const(a)}:")
                L.append(f"{indent}    return False")
                key = _root_key(a)
                if key is None:  # storage NumPy does not own: the exact check every time
                    return L + [f"{indent}return False"]
                static[p] = key
            else:
                dynamic.append(p)
        for p, q in _pairs(sorted(static)):
            if (p in self.written or q in self.written) and static[p] == static[q]:
                return L + [f"{indent}return False"]  # (collide now: the exact check decides)
        every = s.const(frozenset(static.values()))
        written = s.const(frozenset(k for p, k in static.items() if p in self.written))
        nd = s.const(np.ndarray, "ndarray")
        for p in dynamic:
            kind, ref = self.refs[p]
            if kind == "arg":
                expr = f"flat[{ref}]._value"
            elif kind == "arg_grad":
                expr = f"flat[{ref}]._grad._value"
            else:
                expr = f"{s.const(ref)}._grad._value"
            L.append(f"{indent}a = {expr}")
            L.append(f"{indent}b = a.base")
            L.append(f"{indent}if b is None:")
            L.append(f"{indent}    k{p} = id(a)")
            L.append(f"{indent}elif type(b) is {nd} and b.base is None:")
            L.append(f"{indent}    k{p} = id(b)")
            L.append(f"{indent}else:")
            L.append(f"{indent}    return False")
            L.append(f"{indent}if k{p} in {every if p in self.written else written}:")
            L.append(f"{indent}    return False")
        for p, q in _pairs(dynamic):
            if p in self.written or q in self.written:
                L.append(f"{indent}if k{p} == k{q}:")
                L.append(f"{indent}    return False")
        return L


def _pairs(items):
    return [(p, q) for n, p in enumerate(items) for q in items[n + 1:]]


def _root_key(a):
    """id of the array owning ``a``'s memory, or None when NumPy does not own it (an array
    over a foreign buffer, as_strided's wrapper): such storage is compared exactly."""
    b = a.base
    if b is None:
        return id(a)
    if type(b) is np.ndarray and b.base is None:
        return id(b)
    return None


# ---------------------------------------------------------------------------- after tracing
def finish(cap, flat, same):
    """The alias guard of a finished capture (appended to its state guards), or raises
    AliasFallback when a written tensor overlaps another bound tensor. ``same``: {j: i} from
    duplicate_arguments, traced as one tensor."""
    from ...core.tensor import Tensor

    refs, names = [], []
    seen_data = set()
    for b in cap.bindings:
        if b is None or b.kind not in _STORAGE_KINDS:
            continue
        if b.kind == "arg" and b.ref in same:
            continue  # (traced as its twin: the program does not read it)
        if b.kind in ("data", "grad"):
            if (b.kind, id(b.ref)) in seen_data:
                continue
            seen_data.add((b.kind, id(b.ref)))
        refs.append((b.kind, b.ref))
        names.append(_name(cap, b.kind, b.ref))
    position = {}  # a binding's key -> its positions in refs (tensors by identity, arguments by index)
    for p, (kind, ref) in enumerate(refs):
        position.setdefault(binding_key(kind, ref), []).append(p)
    written = set()
    for kind, ref in cap.writebacks:
        if kind in _STORAGE_KINDS:
            written.update(position.get(binding_key(kind, ref), ()))
    pairs = [(j, i) for j, i in sorted(same.items()) if isinstance(flat[j], Tensor)]
    guard = AliasGuard(refs, frozenset(written), pairs, frozenset(), names, cap.arg_names)
    if not written and not pairs:
        return None  # nothing written in place, nothing traced as one: aliasing is harmless
    found = guard.relation(flat)
    if found:
        guard.pairs = found
        cap.state_guards.append(("alias", guard))
        raise AliasFallback(f"{guard.describe_pairs(sorted(found))} and the function writes "
                            "into one of them in place (an overlap other than the same tensor "
                            "passed twice is not captured)", cap)
    cap.state_guards.append(("alias", guard))
    return guard


def binding_key(kind, ref):
    """A hashable key of a binding or write-back into user storage (``_STORAGE_KINDS``): a
    lifted tensor ("data", "grad") is known by identity, an argument by its index."""
    return (kind, id(ref)) if kind in ("data", "grad") else (kind, ref)


def _name(cap, kind, ref):
    naming = getattr(cap, "naming", None)
    if kind == "arg":
        return f"argument {cap.arg_names[ref]}"
    if naming is None:
        return str((kind, ref))
    return naming.of((kind, ref))


# ---------------------------------------------------------------------------- eager entries
class EagerFallback:
    """A cache entry that runs the function eagerly, for calls whose aliasing the trace could
    not express. Its guards are those of the trace (AliasFallback.capture), aliasing included,
    checked like a Program's; ``reason`` says why."""

    def __init__(self, capture, fn, spec, reason):
        self.capture = capture
        self.graph = capture.graph
        self.forward = self.backward = None
        self.backend = "eager"
        self.reason = reason
        self.calls = 0
        self._fn = fn
        self._spec = spec
        self._fast_check = None
        self._fast_run = False  # (no generated run: CompiledFunction's first-program hit skips it)

    @property
    def source(self):
        return f"# runs eagerly: {self.reason}\n"

    @property
    def guards(self):
        from ..program import Program

        return Program.guards.fget(self)

    def mismatch(self, flat_args, grad_enabled):
        from ..program import Program

        return Program.mismatch(self, flat_args, grad_enabled)

    def run(self, flat_args):
        from ...core import pytree

        self.calls += 1
        args, kwargs = pytree.unflatten(self._spec, list(flat_args))
        return self._fn(*args, **kwargs)

    def __str__(self):
        return self.source


# ---------------------------------------------------------------------------- view results
def view_of_input(leaf, tracer, sym_args, same):
    """(kind, ref, (view_fn, view_inv)) when traced result ``leaf`` is, eagerly, a view of a
    flat argument ("arg", i) or of a lifted tensor ("data", tensor): ``view_fn(real base)``
    computes it again. None otherwise (a view of a tensor made inside the function is
    returned as a copy, as nobody else holds its base)."""
    base = leaf._base
    if base is None or leaf._view_fn is None:
        return None
    fns = (leaf._view_fn, leaf._view_inv)
    for i, (s, _) in sym_args.items():
        if base is s and i not in same:
            return ("arg", i, fns)
    if not base._is_traced:  # a view of a lifted tensor made while tracing
        return ("data", base, fns)
    return None


def make_view_result(fns, base, requires_grad):
    """The result view, made eagerly on the real ``base`` (after the write-backs): the view
    function's ops give its values (a NumPy view of base's storage) and its autograd history;
    it is then marked a view of ``base`` as the view ops mark theirs (``_base``, the shared
    version counter). Where NumPy had to copy (a reshape of a non-contiguous tensor), it stays
    a copy, as eagerly. Without grad mode when the traced result did not require grad (made
    under no_grad, or from a base that does not require grad)."""
    from ...autograd import grad_mode
    from ...core.views import make_view

    from ..._api.functional import _alias

    fn, inv = fns
    with grad_mode.set_grad_enabled(requires_grad and grad_mode.is_grad_enabled()):
        out = fn(base)
        if out is base:  # (an identity view function: eagerly, a new tensor over the same storage)
            return _alias(base)
    # (re-marked even when a view op inside ``fn`` marked it: as a view of an intermediate)
    if not np.may_share_memory(out._value, base._value):
        return out
    return make_view(out, base, fn, inv)
