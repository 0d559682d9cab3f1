"""Splitting a joint forward+backward graph into a forward program (which also returns the
values the backward needs: the saved values) and a backward program.

Two choices of saved values are compared:

- **annotations**: exactly what the VJP rules read from the forward (each op's ``save``
  annotation; ``ctx.save_for_backward`` for custom Functions): the forward-phase values that
  backward-phase nodes use;
- **min-cut** (``passes.mincut``): the cheapest set, by the cost model, from which the backward
  can recompute the rest with cheap elementwise and movement ops.

The min-cut choice is taken only when it saves strictly fewer bytes; ``split`` reports which
choice won and what the annotations would have cost.
"""
from __future__ import annotations

from ..ir.graph import Graph
from ..passes import mincut


def _closure(outputs, stop=()):
    """Nodes needed to compute ``outputs`` from the values in ``stop`` (ids)."""
    needed, stack = set(), list(outputs)
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


def extract(graph, name, inputs, outputs, writebacks=(), labels=None):
    """A new Graph computing ``outputs`` (and ``writebacks``) from ``inputs`` (Values of
    ``graph``); values are cloned so the two graphs share nothing but constants' data.
    Returns (new graph, {id(old value): new value})."""
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
            if i.is_constant:
                args.append(i)
            elif id(i) in mapping:
                args.append(mapping[id(i)])
            else:
                raise ValueError(f"{name}: value {i.ref()} needed by {n.op.name} is not available")
        mapping[id(n.out)] = new.add_node(n.op, args, n.attrs, n.out.shape, n.out.dtype, n.phase)

    def get(v):
        return v if v.is_constant else mapping[id(v)]

    new.outputs = [get(v) for v in outputs]
    new.writebacks = [(get(v), d) for v, d in writebacks]
    new.renumber()
    return new, mapping


def annotation_saved(graph, grad_inputs, grad_values):
    """Forward values read by the backward-phase nodes that compute ``grad_values``."""
    grad_ids = {id(v) for v in grad_inputs}
    found, seen, stack = {}, set(), list(grad_values)
    while stack:
        v = stack.pop()
        if v.is_constant or id(v) in seen or id(v) in grad_ids:
            continue
        seen.add(id(v))
        if v.node is not None and v.node.phase == "backward":
            stack.extend(v.node.inputs)
        else:
            found[id(v)] = v
    return mincut._in_order(graph, found)


def saved_bytes(values):
    return sum(v.nbytes for v in values)


class Split:
    """The result of ``split``: ``graph`` (the call as the user sees it), ``forward``,
    ``backward``, ``choice`` ("min-cut" or "annotations"), ``annotation_bytes``."""

    def __init__(self, graph, forward, backward, choice, annotation_bytes):
        self.graph = graph
        self.forward = forward
        self.backward = backward
        self.choice = choice
        self.annotation_bytes = annotation_bytes


def split(joint, n_user, grad_inputs, diff_positions, strategy="mincut"):
    """Split ``joint`` (outputs: ``n_user`` user outputs, then one gradient per differentiable
    input; ``grad_inputs[k]`` is the incoming gradient of user output ``diff_positions[k]``).

    forward: original inputs -> user outputs, saved values; write-backs
    backward: saved values, incoming gradients -> the gradients (joint output order)
    """
    user, grad_values = joint.outputs[:n_user], joint.outputs[n_user:]
    grad_ids = {id(v) for v in grad_inputs}
    forward_inputs = [v for v in joint.inputs if id(v) not in grad_ids]
    annotated = annotation_saved(joint, grad_inputs, grad_values)
    chosen, choice = annotated, "annotations"
    if strategy == "mincut":
        cut = mincut.choose_saved(joint, grad_inputs, grad_values)
        if saved_bytes(cut) < saved_bytes(annotated):
            chosen, choice = cut, "min-cut"
    elif strategy != "annotations":
        raise ValueError(f"unknown partition strategy {strategy!r}; expected 'mincut' or 'annotations'")
    graph, _ = extract(joint, joint.name, forward_inputs, user, joint.writebacks)
    fwd, fmap = extract(joint, f"{joint.name}_forward", forward_inputs, list(user) + chosen,
                        joint.writebacks)
    fwd.saved = fwd.outputs[n_user:]
    labels = {id(v): f"saved {fwd.outputs[n_user + j].ref()}" for j, v in enumerate(chosen)}
    for g, pos in zip(grad_inputs, diff_positions):
        out = fwd.outputs[pos]
        labels[id(g)] = f"grad of {out.ref()}"
    bwd, _ = extract(joint, f"{joint.name}_backward", chosen + list(grad_inputs), grad_values,
                     labels=labels)
    return Split(graph, fwd, bwd, choice, saved_bytes(annotated))
