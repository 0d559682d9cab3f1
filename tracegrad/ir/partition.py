"""Splitting a joint forward+backward graph into a forward program (which also returns the
values the backward needs: the saved values) and a backward program.

The default choice of saved values is exactly what the backward reads (the VJP rules'
saved-tensor annotations). ``tracegrad.ir.passes.mincut`` may refine it by recomputing cheap
elementwise values in the backward.
"""
from __future__ import annotations

from .graph import Graph


def _closure(outputs, stop=()):
    """Nodes needed to compute ``outputs`` from the values in ``stop`` (ids)."""
    needed, stack = set(), [v for v in outputs]
    while stack:
        v = stack.pop()
        if id(v) in stop:
            continue
        n = v.node
        if n is None or id(n) in needed:
            continue
        needed.add(id(n))
        stack.extend(n.inputs)
    return needed


def extract(graph, name, inputs, outputs, writebacks=(), labels=None, node_filter=None):
    """A new Graph computing ``outputs`` from ``inputs`` (Values of ``graph``); values are
    cloned so the two graphs share nothing."""
    new = Graph(name)
    mapping = {}
    for v in inputs:
        label = (labels or {}).get(id(v), v.label)
        mapping[id(v)] = new.add_input(v.shape, v.dtype, label)
    wanted = _closure(list(outputs) + [w for w, _ in writebacks], stop=set(mapping))
    for n in graph.nodes:
        if id(n) not in wanted or id(n.out) in mapping:
            continue
        args = []
        for i in n.inputs:
            if i.kind in ("const", "literal"):
                args.append(i)
            elif id(i) in mapping:
                args.append(mapping[id(i)])
            else:
                raise ValueError(f"{name}: value {i.ref()} needed by {n.op.name} is not available")
        mapping[id(n.out)] = new.add_node(n.op, args, n.attrs, n.out.shape, n.out.dtype)

    def get(v):
        return v if v.kind in ("const", "literal") else mapping[id(v)]

    new.outputs = [get(v) for v in outputs]
    new.writebacks = [(get(v), d) for v, d in writebacks]
    return new.renumber()


def split(graph, n_forward, grad_inputs, grad_outputs):
    """Return (forward Graph, backward Graph, saved Values of the joint graph).

    forward: original inputs -> outputs + writebacks + saved
    backward: saved + grad_inputs -> one gradient per differentiable input (grad_outputs order)
    """
    forward_nodes = {id(n) for n in graph.nodes[:n_forward]}
    forward_inputs = [v for v in graph.inputs if not any(v is g for g in grad_inputs)]
    bwd_outputs = [v for _, v in grad_outputs]
    bwd_needed = _closure(bwd_outputs)
    saved, seen = [], set()

    def consider(v):
        if v.kind in ("const", "literal") or id(v) in seen:
            return
        from_forward = (v.node is not None and id(v.node) in forward_nodes) or (
            v.node is None and any(v is i for i in forward_inputs))
        if from_forward:
            seen.add(id(v))
            saved.append(v)

    for n in graph.nodes[n_forward:]:
        if id(n) in bwd_needed:
            for i in n.inputs:
                consider(i)
    for v in bwd_outputs:
        consider(v)
    fwd = extract(graph, f"{graph.name}_forward", forward_inputs,
                  list(graph.outputs) + saved, graph.writebacks)
    fwd.saved = set(fwd.outputs[len(graph.outputs):])  # returned after the user's outputs
    labels = {id(v): "saved" for v in saved}
    bwd = extract(graph, f"{graph.name}_backward", saved + list(grad_inputs), bwd_outputs,
                  labels=labels)
    return fwd, bwd, saved
