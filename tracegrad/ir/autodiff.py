"""The differentiation pass: builds the backward of a traced forward from the VJP rules.

The forward's autograd Nodes were recorded while tracing (each OpNode remembers which values
its rule saves: the saved-tensor annotations; custom Functions remember what they passed to
``save_for_backward``). Running the engine over those Nodes with *symbolic* incoming gradients
records the backward into the same joint graph; ``partition`` then splits it in two.
"""
from __future__ import annotations

from ..autograd import engine
from ..tensor import Tensor


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
    grads = engine.run_backward(outs, grad_tensors, retain_graph=True, create_graph=False,
                                inputs=tuple(wrt), accumulate=False, allow_unused=True)
    if len(tracer.lifted) != n_lifted:
        from .trace import GraphBreak

        raise GraphBreak("the backward reads a tensor the forward never used (a global read only "
                         "inside a custom Function's backward)")
    grad_outputs = [(pos, tracer.value_of(g)) for pos, g in zip(positions, grads) if g is not None]
    graph.phase = "forward"
    return n_forward, [t._value for t in grad_tensors], grad_outputs


def _arg_symbol(tracer, index):
    return tracer.arg_symbol_tensors.get(index)
