"""Constant folding: a node whose inputs are all literals or constants is evaluated now with
its op's NumPy implementation (the interpreter's), keeping the graph small:

- a 0-d result becomes a literal (printed inline: ``0.1:f32``);
- a result holding one value everywhere becomes ``expand <literal>`` (no array is stored);
  an elementwise node whose inputs each hold one value everywhere (``mul (expand 0.1) 2.0``)
  is computed once on those values the same way;
- other results become a ``const`` when they are small (at most ``FOLD_LIMIT`` elements, or no
  larger than the constants they are computed from); larger ones are left to run.

Random ops are never folded (their seed is an input anyway).

>>> import tracegrad as tg
>>> g = tg.compile(lambda x: x * (tg.tensor(3.0) - 1.0),
...                backend="interpreter").inspect(tg.ones(2)).graph
>>> print(g)
<lambda>(%0:f32[2] arg x):
  %1:f32[2] = mul %0 2.0:f32
  return %1
"""
from __future__ import annotations

import numpy as np

from ...core.dtypes import widen_bfloat16
from ...ops.registry import REGISTRY
from .simplify import scalar_of, uniform_value

FOLD_LIMIT = 64


def fold(graph):
    subst, kept = {}, []

    def get(v):
        while id(v) in subst:
            v = subst[id(v)]
        return v

    for n in graph.nodes:
        n.inputs = [get(i) for i in n.inputs]
        if not n.op.pure:
            kept.append(n)
            continue
        if not all(i.is_constant for i in n.inputs):
            if not _fold_uniform(graph, n, subst):
                kept.append(n)
            continue
        if n.op.name == "expand" and n.inputs[0].kind == "literal":
            kept.append(n)  # already the smallest form of a uniform value
            continue
        result = _evaluate(n)
        if result is None:
            kept.append(n)
            continue
        if result.ndim == 0:
            subst[id(n.out)] = graph.literal(result[()], n.out.dtype)
        elif (one := uniform_value(result)) is not None:
            n.op, n.attrs = REGISTRY["expand"], {"shape": n.out.shape}
            n.inputs = [graph.literal(one, n.out.dtype)]
            kept.append(n)
        elif result.size <= max(FOLD_LIMIT, sum(i.numel for i in n.inputs if i.kind == "const")):
            result.setflags(write=False)
            subst[id(n.out)] = graph.const(result, n.out.dtype)
        else:
            kept.append(n)
    graph.nodes = kept
    graph.substitute(subst)
    return graph


def _fold_uniform(graph, n, subst):
    """An elementwise node whose inputs each hold one value everywhere computes one value:
    it becomes a literal (0-d) or ``expand <literal>``. Returns True when ``n`` was dropped."""
    if n.op.kind != "elementwise" or n.op.name == "expand":
        return False
    scalars = [scalar_of(i) for i in n.inputs]
    if any(s is None for s in scalars):
        return False
    try:
        with np.errstate(all="ignore"):
            r = n.op.impl(*widen_bfloat16([np.asarray(s) for s in scalars]), **n.attrs)
    except Exception:
        return False
    r = np.asarray(r, dtype=n.out.dtype.np)
    if r.ndim != 0:
        return False
    lit = graph.literal(r[()], n.out.dtype)
    if n.out.shape == ():
        subst[id(n.out)] = lit
        return True
    n.op, n.inputs, n.attrs = REGISTRY["expand"], [lit], {"shape": n.out.shape}
    return False


def _evaluate(n):
    arrays = [np.asarray(i.data, dtype=i.dtype.np) for i in n.inputs]
    try:
        with np.errstate(all="ignore"):
            out = n.op.impl(*widen_bfloat16(arrays), **n.attrs)
    except Exception:  # (e.g. an index out of range: leave it to fail at run time)
        return None
    out = np.array(out, dtype=n.out.dtype.np, copy=True)
    if out.shape != n.out.shape:
        return None
    return out
