"""The cost model of the forward/backward partitioner (``mincut.py``), kept apart so that it is
small, documented and tested on its own.

Between the forward and the backward a compiled function keeps some values alive ("saved");
everything else the backward needs it recomputes from them. The model prices the two choices:

- **saving** a value costs its size in bytes (``save_cost``): that memory stays allocated from
  the end of the forward until the backward runs, which is what limits batch sizes;
- **recomputing** a value is free when its op is cheap (``can_recompute``): elementwise math
  and movement (reshape, permute, expand, slice, cat, ...) are memory-bound, so recomputing
  them inside the backward's fused loops costs about what reading a saved tensor would;
  reductions, matmuls, index ops, convolution helpers and random ops are never recomputed
  (they are compute-bound, or their result would not be the same);
- ties in bytes are broken towards saving fewer values (``TIE_BREAK``), and the partitioner
  keeps the plain choice of the saved-tensor annotations unless the cut saves strictly fewer
  bytes, so recomputation is only ever introduced when it pays.

>>> import tracegrad as tg
>>> from tracegrad.compiler.ir.graph import Graph
>>> from tracegrad.ops.registry import REGISTRY
>>> g = Graph()
>>> x = g.add_input((1024,), tg.float32, "arg x")
>>> y = g.add_node(REGISTRY["exp"], [x], {}, (1024,), tg.float32)
>>> save_cost(y), can_recompute(y.node), can_recompute(g.add_node(
...     REGISTRY["sum"], [y], {"dim": (0,), "keepdim": False}, (), tg.float32).node)
(4096, True, False)
"""
from __future__ import annotations

RECOMPUTABLE_KINDS = frozenset({"elementwise", "movement"})
TIE_BREAK = 1  # added to every saved value's cost, in units of 1 / SCALE bytes


def save_cost(v):
    """Bytes kept alive by saving value ``v`` for the backward."""
    return v.nbytes


def can_recompute(node):
    """Whether the backward may recompute ``node`` instead of the forward saving its value."""
    return node.op.kind in RECOMPUTABLE_KINDS and node.op.pure


def capacity(v, n_values):
    """The min-cut capacity of saving ``v``: bytes, scaled so that the tie-break (one unit per
    saved value) can never outweigh a single byte among ``n_values`` candidates."""
    return save_cost(v) * (n_values + 1) + TIE_BREAK
