"""Dead-code elimination: drop nodes whose values reach no output and no write-back.
Inputs are kept (a program's inputs are bound by position).

>>> import tracegrad as tg
>>> def f(x):
...     unused = x.exp()
...     return x + 1
>>> print(tg.compile(f, backend="interpreter").inspect(tg.ones(2)).graph)
f(%0:f32[2] arg x):
  %1:f32[2] = add %0 1.0:f32
  return %1
"""
from __future__ import annotations


def dce(graph):
    live = set()
    roots = list(graph.outputs) + [v for v, _ in graph.writebacks]
    stack = [v for v in roots if v.node is not None]
    while stack:
        v = stack.pop()
        if id(v.node) in live:
            continue
        live.add(id(v.node))
        stack.extend(i for i in v.node.inputs if i.node is not None)
    graph.nodes = [n for n in graph.nodes if id(n) in live]
    return graph
