"""Dead-code elimination: drop nodes whose values reach no output and no write-back."""
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
