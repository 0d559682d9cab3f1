"""The differentiation pass: builds the backward of a traced forward from the VJP rules.

The forward's autograd Nodes were recorded while tracing (each OpNode remembers which values
its rule saves: the saved-tensor annotations; custom Functions remember what they passed to
``save_for_backward``). Running the engine over those Nodes with *symbolic* incoming gradients
records the backward into the same joint graph; ``partition`` then splits it in two.
"""
from __future__ import annotations

from ...autograd import engine
from ...core.tensor import Tensor


def differentiate(cap, tracer, graph):
    """Append the backward of ``cap.diff_outputs`` w.r.t. every differentiable input to
    ``graph``; return (first backward node index, grad input Values, [(binding index, Value)])."""
    n_forward = len(graph.nodes)
    graph.phase = "backward"  # nodes recorded from here on belong to the backward
    outs = [t for _, t in cap.diff_outputs]
    grad_tensors = []
    for t in outs:
        v = graph.add_input(tuple(t.shape), t.dtype, "grad")
        grad_tensors.append(Tensor._make(v, t.dtype))
    wrt, positions = [], []
    for k, (v, b) in enumerate(zip(graph.inputs, cap.bindings)):
        if b is None:
            continue
        if b.kind == "arg":
            sym = _arg_symbol(tracer, b.ref)
            if sym is not None and sym.requires_grad:
                wrt.append(sym)
                positions.append(k)
        elif b.kind == "data" and b.ref.requires_grad:
            wrt.append(b.ref)
            positions.append(k)
    if not wrt:
        graph.phase = "forward"
        return n_forward, [], []
    n_lifted = len(tracer.lifted)
    engine.defer_errors = True  # (a backward rule's error waits for .backward(): engine._run_node)
    try:
        grads = engine.run_backward(outs, grad_tensors, retain_graph=True, create_graph=False,
                                    inputs=tuple(wrt), accumulate=False, allow_unused=True)
    finally:
        engine.defer_errors = False
    if len(tracer.lifted) != n_lifted:
        from ...core.tracing import GraphBreak

        raise GraphBreak("the backward reads a tensor the forward never used (a global read only "
                         "inside a custom Function's backward)")
    grad_outputs = [(pos, tracer.value_of(g)) for pos, g in zip(positions, grads) if g is not None]
    cap.backward_errors = _deferred_errors(graph, [v for _, v in grad_outputs])
    graph.phase = "forward"
    return n_forward, [t._value for t in grad_tensors], grad_outputs


def _deferred_errors(graph, grads):
    """``[(exception name, message, {j: the j-th gradient depends on it})]`` for every
    ``backward_error`` node (ops/deferred.py), in the order the engine met them (eager's: the
    first one a backward needs is the one it raises). program.CompiledBackward raises them."""
    producer = {id(n.out): n for n in graph.nodes}
    found = {}
    for j, v in enumerate(grads):
        seen, stack = set(), [v]
        while stack:
            n = producer.get(id(stack.pop()))
            if n is None or id(n) in seen:
                continue
            seen.add(id(n))
            if n.op.name == "backward_error":
                found.setdefault(id(n), (n, set()))[1].add(j)
            stack.extend(n.inputs)
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    return [(n.attrs["error"], n.attrs["message"], frozenset(js))
            for n, js in sorted(found.values(), key=lambda e: order[id(e[0])])]


def _arg_symbol(tracer, index):
    return tracer.arg_symbol_tensors.get(index)
