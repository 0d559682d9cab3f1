"""Choosing what a compiled forward saves for its backward by a minimum cut over the joint
(forward + backward) graph, with the prices of ``cost_model``.

Values are *primal* when they do not depend on an incoming gradient (so the forward could
compute them) and *tangent* otherwise (only the backward can). The backward needs the primal
values that tangent nodes read: the boundary. Any set of primal values from which the whole
boundary can be recomputed with cheap ops is a valid choice; the cheapest such set is a
minimum s-t cut in this flow network:

- every primal value ``v`` on a path to the boundary is split into ``v.in -> v.out`` whose
  capacity is the price of saving ``v`` (cutting that edge = saving ``v``);
- ``source -> v.in`` (unbounded) for graph inputs and for values that cannot be recomputed:
  they are only ever available from the forward;
- ``u.out -> v.in`` (unbounded) for each input ``u`` of a recomputable node ``v``: recomputing
  ``v`` in the backward needs ``u`` there too;
- ``v.out -> sink`` (unbounded) for boundary values.

The values whose ``in`` side lies with the source and ``out`` side with the sink are saved;
the backward recomputes every other primal value it needs.

>>> import tracegrad as tg
>>> cf = tg.compile(lambda x: x.cos().sin().sum(), backend="interpreter")
>>> p = cf.inspect(tg.ones(256, requires_grad=True))
>>> [(s.name, s.bytes) for s in p.saved], p.saved_choice   # x only: cos(x) is recomputed
([('%0', 1024)], 'min-cut')
"""
from __future__ import annotations

from . import cost_model

_SOURCE, _SINK = "source", "sink"


def tangent_values(graph, grad_inputs):
    """ids of the values that depend on an incoming gradient."""
    dep = {id(v) for v in grad_inputs}
    for n in graph.nodes:
        if any(id(i) in dep for i in n.inputs):
            dep.add(id(n.out))
    return dep


def boundary(graph, grad_inputs, grad_values):
    """The primal values the backward's tangent part reads (in definition order)."""
    dep = tangent_values(graph, grad_inputs)
    found, seen, stack = {}, set(), list(grad_values)
    while stack:
        v = stack.pop()
        if v.is_constant or id(v) in seen:
            continue
        seen.add(id(v))
        if id(v) not in dep:
            found[id(v)] = v
        elif v.node is not None:
            stack.extend(v.node.inputs)
    return _in_order(graph, found)


def choose_saved(graph, grad_inputs, grad_values):
    """The values to save, chosen by minimum cut (in definition order)."""
    import networkx as nx

    wanted = boundary(graph, grad_inputs, grad_values)
    region, stack = {}, list(wanted)  # primal values the boundary is computed from
    while stack:
        v = stack.pop()
        if v.is_constant or id(v) in region:
            continue
        region[id(v)] = v
        if v.node is not None and cost_model.can_recompute(v.node):
            stack.extend(v.node.inputs)
    net = nx.DiGraph()
    n_values = len(region)
    for key, v in region.items():
        net.add_edge((key, "in"), (key, "out"), capacity=cost_model.capacity(v, n_values))
        if v.node is None or not cost_model.can_recompute(v.node):
            net.add_edge(_SOURCE, (key, "in"))
        else:
            for u in v.node.inputs:
                if not u.is_constant:
                    net.add_edge((id(u), "out"), (key, "in"))
    for v in wanted:
        net.add_edge((id(v), "out"), _SINK)
    if not wanted:
        return []
    _, (source_side, _sink_side) = nx.minimum_cut(net, _SOURCE, _SINK)
    saved = {key: v for key, v in region.items()
             if (key, "in") in source_side and (key, "out") not in source_side}
    return _in_order(graph, saved)


def _in_order(graph, values):
    order = [v for v in graph.inputs if id(v) in values]
    order += [n.out for n in graph.nodes if id(n.out) in values]
    return order
