"""The interpreter backend: executes an IR Graph with the registry's NumPy implementations.
It is the fallback of every other backend and the oracle they are tested against.

>>> import numpy as np, tracegrad as tg
>>> prog = tg.compile(lambda x: (x * 2).sum(), backend="interpreter").inspect(tg.ones(3))
>>> float(run_graph(prog.graph, [np.ones(3, np.float32)])[0])
6.0
"""
from __future__ import annotations

import numpy as np

from ...core.dtypes import widen_bfloat16


def run_graph(graph, inputs):
    """Run ``graph`` on ``inputs`` (ndarrays in graph.inputs order); return the arrays of
    ``graph.outputs`` followed by those of ``graph.writebacks``."""
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"graph expects {len(graph.inputs)} inputs, got {len(inputs)}")
    env = {}
    for v, a in zip(graph.inputs, inputs):
        env[id(v)] = a

    def get(v):
        if v.kind == "literal":
            return np.asarray(v.data, dtype=v.dtype.np)
        if v.kind == "const":
            return v.data
        return env[id(v)]

    for n in graph.nodes:
        out = n.op.impl(*widen_bfloat16([get(v) for v in n.inputs]), **n.attrs)
        if not isinstance(out, np.ndarray) or out.dtype != n.out.dtype.np:
            out = np.asarray(out, dtype=n.out.dtype.np)
        env[id(n.out)] = out
    return [get(v) for v in graph.outputs] + [get(v) for v, _ in graph.writebacks]


class InterpreterExecutable:
    """A compiled form of a graph for the interpreter: nothing to build."""

    source = "# interpreter backend: the IR is executed op by op with NumPy\n"

    def __init__(self, graph):
        self.graph = graph

    def __call__(self, inputs):
        return run_graph(self.graph, inputs)


def build(graph, options=None):
    return InterpreterExecutable(graph)
