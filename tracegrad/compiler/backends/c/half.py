"""float16 and bfloat16 in the C backend: stored as they are, computed in float32.

C has no portable half-precision arithmetic (``_Float16`` is an extension without libm
functions; a bfloat16 is only its bits here, a ``uint16_t``), and BLAS has no half products. So
before lowering, every float16 or bfloat16 value inside a program becomes a float32 one: such
inputs and constants stay in their dtype in memory and are widened where they are read, and
each such result (an output, a value saved for backward, a write-back) is rounded once where it
is written. PyTorch's own compiler does the same on CPU. Eager mode, and the interpreter, round
every op's result instead, so a compiled program can differ from eager by the rounding of its
intermediate steps (it is the more accurate of the two).

>>> import tracegrad as tg
>>> f = tg.compile(lambda x: (x * 3).exp(), backend="c")
>>> f(tg.tensor([0.5], dtype=tg.float16))
tensor([4.4805], dtype=tracegrad.float16)
"""
from __future__ import annotations

from ....core import dtypes
from ...ir.graph import Graph


NARROW = (dtypes.float16, dtypes.bfloat16)


def compute_half_in_float(graph):
    """``graph`` itself when it holds no float16 or bfloat16 value, else a copy computing in
    float32 with the same inputs, outputs and write-backs (dtypes and positions)."""
    values = graph.inputs + [i for n in graph.nodes for i in n.inputs] + [n.out for n in graph.nodes]
    if not any(v.dtype in NARROW for v in values):
        return graph
    from ....ops.elementwise import CAST

    new, widened = Graph(graph.name), {}

    def convert(v, dtype):
        return new.add_node(CAST, [v], {"dtype": dtype}, v.shape, dtype)

    for v in graph.inputs:
        nv = new.add_input(v.shape, v.dtype, v.label)
        widened[id(v)] = convert(nv, dtypes.float32) if v.dtype in NARROW else nv

    def get(v):
        if v.kind == "literal" and id(v) not in widened:
            dtype = dtypes.float32 if v.dtype in NARROW else v.dtype
            widened[id(v)] = new.literal(v.data, dtype)
        elif v.kind == "const" and id(v) not in widened:  # (the executable binds the original data)
            c = new.const(v.data, v.dtype)
            widened[id(v)] = convert(c, dtypes.float32) if v.dtype in NARROW else c
        return widened[id(v)]

    for n in graph.nodes:
        attrs = {k: dtypes.float32 if a in NARROW else a for k, a in n.attrs.items()}
        dtype = dtypes.float32 if n.out.dtype in NARROW else n.out.dtype
        widened[id(n.out)] = new.add_node(n.op, [get(i) for i in n.inputs], attrs, n.out.shape, dtype, n.phase)

    narrowed = {}

    def result(v):  # the value in its own dtype again: one rounding per narrow result
        if v.dtype not in NARROW:
            return get(v)
        if id(v) not in narrowed:
            narrowed[id(v)] = convert(get(v), v.dtype)
        return narrowed[id(v)]

    new.outputs = [result(v) for v in graph.outputs]
    new.saved = new.outputs[len(new.outputs) - len(graph.saved):] if graph.saved else []
    new.writebacks = [(result(v), d) for v, d in graph.writebacks]
    return new.renumber()
