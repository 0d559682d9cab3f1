"""Algebraic simplification: rewrite nodes into cheaper equivalents, in place.

Rules (each keeps the node's exact type; a rewrite that would change a shape or dtype is
skipped):

- broadcast absorption: an elementwise operand that holds one value everywhere (a literal, a
  uniform constant, an ``expand``/``reshape``/``permute``/``copy`` of one) becomes a literal:
  ``mul (expand 0.1 shape=(5,2)) %7`` -> ``mul 0.1:f32 %7``;
- identities: ``x+0``, ``0+x``, ``x-0``, ``x*1``, ``1*x``, ``x/1``, ``x**1`` -> ``x`` (or
  ``expand x`` when the 0 or 1 only broadcast ``x`` to a larger shape); for floats the zero
  added must be -0.0, since -0.0 + 0.0 is +0.0;
  ``0-x`` (integers; ``-0.0-x`` for floats), ``x*-1`` -> ``neg x``; ``x**2`` -> ``mul x x``; ``neg (neg x)`` -> ``x``;
- ``where`` with a literal condition, or with equal branches, -> the chosen branch;
- movement: reshape/expand to the same shape, identity permute, cast to the same dtype,
  ``copy`` (values are immutable in the IR), sum over no dims -> the operand;
  reshape of reshape, expand of expand, permute of permute, expand of a reshape that only
  adds leading 1s -> one op;
  ``reshape (sum x keepdim=True)`` dropping exactly the kept dims -> ``sum x keepdim=False``.

>>> import tracegrad as tg
>>> g = tg.compile(lambda x: (x * 1.0 - 0.0).reshape(6).reshape(2, 3),
...                backend="interpreter").inspect(tg.ones(2, 3)).graph
>>> print(g)
<lambda>(%0:f32[2,3] arg x):
  return %0
"""
from __future__ import annotations

import numpy as np

from ...ops.registry import REGISTRY

_UNIFORM_SCAN_LIMIT = 1 << 16  # constants larger than this are not scanned for uniformity


def simplify(graph):
    uses = graph.users()
    subst, kept = {}, []

    def get(v):
        while id(v) in subst:
            v = subst[id(v)]
        return v

    for n in graph.nodes:
        n.inputs = [get(i) for i in n.inputs]
        if n.op.kind == "elementwise" and n.op.pure:
            _absorb_broadcasts(graph, n)
        rule = _RULES.get(n.op.name)
        replacement = rule(graph, n, uses) if rule is not None else None
        if replacement is not None:
            subst[id(n.out)] = replacement
            continue
        kept.append(n)
    graph.nodes = kept
    graph.substitute(subst)
    return graph


# ----------------------------------------------------------------------------- helpers
def uniform_value(array):
    """The one value a non-empty ``array`` holds everywhere, or None. Bit for bit: ``-0.0``
    beside ``0.0`` is two values (``1 / x`` tells them apart), and NaNs of one pattern are one."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if not flat.size:
        return None
    bits = flat.view(f"u{flat.itemsize}")
    return flat[0] if bool((bits == bits[0]).all()) else None


def scalar_of(v):
    """The one value ``v`` holds everywhere (a NumPy scalar of v's dtype), or None."""
    while True:
        if v.kind == "literal":
            return v.data
        if v.kind == "const":
            d = v.data
            return uniform_value(d) if d.size <= _UNIFORM_SCAN_LIMIT else None
        if v.kind == "node" and v.node.op.name in ("expand", "reshape", "permute", "copy"):
            v = v.node.inputs[0]
            continue
        return None


def _same_type(a, b):
    return a.shape == b.shape and a.dtype is b.dtype


def _is(v, c):
    return v.kind == "literal" and not np.isnan(v.data) and v.data == c if v.dtype.is_floating_point \
        else v.kind == "literal" and v.data == c


def _infers_same(n, op, inputs, attrs):
    try:
        shape, dtype = op.infer(*inputs, **attrs)
    except (TypeError, ValueError, RuntimeError, IndexError):  # a rewrite the op rejects is not
        return False  # applied (anything else is a bug in a rule: it surfaces)
    return tuple(shape) == n.out.shape and dtype is n.out.dtype


def _mutate(n, op_name, inputs, attrs):
    """Turn node ``n`` into ``op_name(inputs, attrs)`` when that keeps its type."""
    op = REGISTRY[op_name]
    if not _infers_same(n, op, inputs, attrs):
        return None
    n.op, n.inputs, n.attrs = op, list(inputs), dict(attrs)
    return None


def _absorb_broadcasts(graph, n):
    for i, v in enumerate(n.inputs):
        if v.kind == "literal":
            continue
        s = scalar_of(v)
        if s is None:
            continue
        trial = list(n.inputs)
        trial[i] = graph.literal(s, v.dtype)
        if _infers_same(n, n.op, trial, n.attrs):
            n.inputs = trial


def _pick(n, v):
    return v if _same_type(v, n.out) else None


# ----------------------------------------------------------------------------- rules
def _identity(n, x, other, c):
    """``n`` computes ``x`` when ``other`` holds ``c`` everywhere: ``x`` itself, or ``expand x``
    when ``other`` only broadcast it to a larger shape."""
    s = scalar_of(other)
    if s is None or (isinstance(s, np.floating) and np.isnan(s)) or s != c:
        return False, None
    if _same_type(x, n.out):
        return True, x
    if x.dtype is n.out.dtype:
        return True, _mutate(n, "expand", [x], {"shape": n.out.shape})
    return False, None


def _first_identity(n, pairs):
    for x, other, c in pairs:
        hit, value = _identity(n, x, other, c)
        if hit:
            return value
    return None


def _additive_identity(n, v):
    """``v`` is a zero that ``x + v`` may drop: for floats only -0.0, since -0.0 + 0.0 is +0.0
    (IEEE 754), so ``x + 0.0`` is not ``x`` where x is -0.0."""
    if not n.out.dtype.is_floating_point:
        return True
    s = scalar_of(v)
    return s is not None and bool(np.all(np.signbit(s)))


def _add(graph, n, uses):
    a, b = n.inputs
    return _first_identity(n, [(x, o, 0) for x, o in ((a, b), (b, a)) if _additive_identity(n, o)])


def _sub(graph, n, uses):
    a, b = n.inputs
    # 0 - b is -b except for floats where b is +0.0 (0.0 - 0.0 is +0.0): only -0.0 - b is -b
    if _is(a, 0) and n.out.dtype.category > 0 and _additive_identity(n, a):
        return _mutate(n, "neg", [b], {})
    return _first_identity(n, [(a, b, 0)])


def _mul(graph, n, uses):
    a, b = n.inputs
    for x, c in ((a, b), (b, a)):
        if _is(c, -1) and n.out.dtype.category > 0:
            return _mutate(n, "neg", [x], {})
    return _first_identity(n, [(a, b, 1), (b, a, 1)])


def _div(graph, n, uses):
    a, b = n.inputs
    return _first_identity(n, [(a, b, 1)])


def _pow(graph, n, uses):
    a, b = n.inputs
    if _is(b, 1):
        return _pick(n, a)
    if _is(b, 2):
        return _mutate(n, "mul", [a, a], {})
    return None


def _neg(graph, n, uses):
    (a,) = n.inputs
    if a.kind == "node" and a.node.op.name == "neg":
        return _pick(n, a.node.inputs[0])
    return None


def _where(graph, n, uses):
    c, a, b = n.inputs
    if c.kind == "literal":
        return _pick(n, a if bool(c.data) else b)
    if a is b or (a.kind == b.kind == "literal" and a.dtype is b.dtype
                  and a.data.tobytes() == b.data.tobytes()):
        return _pick(n, a)
    return None


def _reshape(graph, n, uses):
    (a,) = n.inputs
    if a.shape == n.out.shape:
        return _pick(n, a)
    if a.kind == "node" and a.node.op.name == "reshape":
        return _mutate(n, "reshape", [a.node.inputs[0]], n.attrs)
    if a.kind == "node" and a.node.op.name == "sum" and a.node.attrs.get("keepdim") \
            and uses.get(id(a), 0) == 1:
        src, dims = a.node.inputs[0], a.node.attrs["dim"]
        dropped = tuple(s for d, s in enumerate(src.shape) if d not in dims)
        if dims and dropped == n.out.shape:
            return _mutate(n, "sum", [src], {"dim": dims, "keepdim": False})
    return None


def _permute(graph, n, uses):
    (a,) = n.inputs
    dims = tuple(n.attrs["dims"])
    if dims == tuple(range(len(dims))):
        return _pick(n, a)
    if a.kind == "node" and a.node.op.name == "permute":
        inner = tuple(a.node.attrs["dims"])
        composed = tuple(inner[d] for d in dims)
        if composed == tuple(range(len(composed))):
            return _pick(n, a.node.inputs[0])
        return _mutate(n, "permute", [a.node.inputs[0]], {"dims": composed})
    return None


def _expand(graph, n, uses):
    (a,) = n.inputs
    if a.shape == n.out.shape:
        return _pick(n, a)
    if a.kind == "node" and a.node.op.name in ("expand", "reshape"):
        src = a.node.inputs[0]
        # a reshape that only adds or drops leading 1s broadcasts exactly like its input
        if a.node.op.name == "expand" or _strip_ones(src.shape) == _strip_ones(a.shape):
            return _mutate(n, "expand", [src], n.attrs)
    return None


def _strip_ones(shape):
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _cast(graph, n, uses):
    (a,) = n.inputs
    if a.dtype is n.out.dtype:
        return _pick(n, a)
    if a.kind == "node" and a.node.op.name == "cast":
        src = a.node.inputs[0]
        # f32 -> f64 -> f32 (any round trip through a wider float) is exact
        if src.dtype is n.out.dtype and a.dtype.is_floating_point and src.dtype.is_floating_point \
                and a.dtype.itemsize > src.dtype.itemsize:
            return _pick(n, src)
    return None


def _copy(graph, n, uses):
    return _pick(n, n.inputs[0])


def _sum(graph, n, uses):
    (a,) = n.inputs
    return _pick(n, a) if not n.attrs.get("dim") else None


_RULES = {"add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow, "neg": _neg,
          "where": _where, "reshape": _reshape, "permute": _permute, "expand": _expand,
          "cast": _cast, "copy": _copy, "sum": _sum}
