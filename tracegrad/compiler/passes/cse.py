"""Common-subexpression elimination: a node computing the same op, on the same inputs, with
the same attributes as an earlier node is replaced by that node's value. Literals compare by
dtype and bits (so ``0.0`` and ``-0.0`` stay apart), small constants by content, other values
by identity. Random ops are left alone.

>>> import tracegrad as tg
>>> g = tg.compile(lambda x: x.exp() + x.exp(), backend="interpreter").inspect(tg.ones(2)).graph
>>> print(g)
<lambda>(%0:f32[2] arg x):
  %1:f32[2] = exp %0
  %2:f32[2] = add %1 %1
  return %2
"""
from __future__ import annotations

import numpy as np

_CONTENT_LIMIT = 64  # constants up to this many elements are compared by content


def cse(graph):
    table, subst, kept = {}, {}, []

    def get(v):
        while id(v) in subst:
            v = subst[id(v)]
        return v

    for n in graph.nodes:
        n.inputs = [get(i) for i in n.inputs]
        key = _key(n) if n.op.pure else None
        if key is not None:
            earlier = table.get(key)
            if earlier is not None:
                subst[id(n.out)] = earlier
                continue
            table[key] = n.out
        kept.append(n)
    graph.nodes = kept
    graph.substitute(subst)
    return graph


def _value_key(v):
    if v.kind == "literal":
        return ("lit", v.dtype.short, v.data.tobytes())
    if v.kind == "const" and v.numel <= _CONTENT_LIMIT:
        return ("const", v.dtype.short, v.shape, v.data.tobytes())
    return ("id", id(v))


class _Unhashable(Exception):
    pass


def _freeze(x):
    if isinstance(x, bool):
        return ("b", x)
    if isinstance(x, float):
        return ("f", repr(x))
    if isinstance(x, (int, str, type(None))):
        return x
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_freeze(i) for i in x)
    if isinstance(x, dict):
        return ("dict",) + tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, np.ndarray):
        return ("nd", x.dtype.str, x.shape, x.tobytes())
    if hasattr(x, "short") and hasattr(x, "np"):
        return ("dtype", x.short)
    try:
        hash(x)
    except TypeError:
        raise _Unhashable from None
    return ("obj", type(x).__name__, x)


def _key(n):
    try:
        attrs = _freeze(n.attrs)
    except _Unhashable:
        return None
    return (n.op.name, tuple(_value_key(i) for i in n.inputs), attrs)
