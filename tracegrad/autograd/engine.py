"""The backward engine: ``backward`` and ``grad`` walk the Node graph from the roots, run each
node's VJP once all its gradients have arrived, and accumulate into leaves.

>>> import tracegrad as tg
>>> x = tg.tensor(3.0, requires_grad=True)
>>> (g,) = tg.autograd.grad(x ** 3, x, create_graph=True)
>>> tg.autograd.grad(g, x)[0]
tensor(18.)
"""
from __future__ import annotations

import heapq

from . import grad_mode
from .graph import AccumulateGrad, gradient_edge


def _as_tuple(x):
    from ..tensor import Tensor

    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _root_grads(outputs, grad_outputs, create_graph):
    from ..tensor import Tensor
    from .. import creation

    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"grad requires one gradient per output: got {len(grad_outputs)} gradients "
            f"for {len(outputs)} outputs"
        )
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out.requires_grad and out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {out.dtype}"
                )
            g = creation.ones_like(out)
        elif not isinstance(g, Tensor):
            g = creation.tensor(g, dtype=out.dtype)
        else:
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                    f"has a shape of {out.shape}."
                )
            if g.dtype.is_floating_point != out.dtype.is_floating_point:
                raise TypeError(
                    f"For complex Tensors, both grad_output and output are required to have the same "
                    f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                    f"output[{i}] has a dtype of {out.dtype}."
                )
        result.append(g)
    return result


def _collect_dependencies(roots):
    """Count, for every reachable node, how many edges point at it."""
    deps = {}
    seen = set()
    stack = [n for n in roots]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            stack.append(nxt)
    return deps


def _nodes_leading_to(roots, targets):
    """Nodes from which one of ``targets`` can be reached (the only ones worth executing)."""
    memo = {}

    def visit(node):
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = False  # cycles cannot happen, but guard against re-entry
        hit = node in targets
        for nxt, _ in node.next_functions:
            if nxt is not None and visit(nxt):
                hit = True
        memo[key] = hit
        return hit

    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 100000))
    return {node for node in _iter_nodes(roots) if visit(node)}


def _iter_nodes(roots):
    seen, stack, out = set(), list(roots), []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        out.append(n)
        stack.extend(nxt for nxt, _ in n.next_functions if nxt is not None)
    return out


def _hooked_tensor(node, nr):
    if isinstance(node, AccumulateGrad):
        return node.variable
    ref = node._tensor_prehooks.get(nr)
    return ref() if ref is not None else None


def _run_tensor_hooks(node, grads):
    for nr in range(len(grads)):
        if grads[nr] is None:
            continue
        t = _hooked_tensor(node, nr)
        if t is not None and t._hooks:
            for hook in list(t._hooks.values()):
                new = hook(grads[nr])
                if new is not None:
                    grads[nr] = new
        ref = node._retain_grad_tensors.get(nr)
        rt = ref() if ref is not None else None
        if rt is not None and rt._retains_grad:
            g = grads[nr]
            if rt._grad is None:
                rt._grad = g if grad_mode.is_grad_enabled() else g.detach().clone()
            else:
                rt._grad = rt._grad + g
    return grads


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs, accumulate,
                 allow_unused=False):
    """The engine. With ``accumulate`` it accumulates into leaves (``backward``); otherwise it
    returns the gradients flowing into ``inputs`` (``grad``)."""
    from . import anomaly

    outputs = _as_tuple(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _root_grads(outputs, _as_tuple(grad_outputs), create_graph)
    root_edges = []
    for i, out in enumerate(outputs):
        edge = gradient_edge(out)
        if edge is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        root_edges.append(edge)

    capture = {}  # (node, nr) -> list of input positions
    targets = None
    if inputs is not None:
        targets = set()
        for pos, t in enumerate(inputs):
            edge = gradient_edge(t)
            if edge is None:
                if accumulate:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
                if not t.requires_grad:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
                continue
            capture.setdefault((edge[0], edge[1]), []).append(pos)
            targets.add(edge[0])

    # Tiny graph of a virtual root so the roots participate in dependency counting.
    root_nodes = [e[0] for e in root_edges]
    deps = _collect_dependencies(root_nodes)
    useful = _nodes_leading_to(root_nodes, targets) if targets is not None else None

    buffers = {}
    for (node, nr), g in zip(root_edges, grads):
        buf = buffers.setdefault(node, [None] * max(node.num_outputs, nr + 1))
        buf[nr] = _add(buf[nr], g)
    ready = []
    for node in set(root_nodes):
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq_nr, id(node), node))

    results = [None] * (len(inputs) if inputs is not None else 0)
    executed = []
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            _, _, node = heapq.heappop(ready)
            node_grads = buffers.pop(node, [None] * node.num_outputs)
            node_grads = _run_tensor_hooks(node, node_grads)
            for hook in list(node._prehooks.values()):
                new = hook(tuple(node_grads))
                if new is not None:
                    node_grads = list(new)
            for nr, g in enumerate(node_grads):
                for pos in capture.get((node, nr), ()):
                    results[pos] = g if accumulate is False else None
                    if accumulate and not isinstance(node, AccumulateGrad):
                        t = inputs[pos]
                        accumulate_into_leaf(t, g, create_graph, run_hooks=False)
            run = useful is None or node in useful
            if isinstance(node, AccumulateGrad):
                run = accumulate and (targets is None or node in targets)
            in_grads = []
            if run and any(g is not None for g in node_grads):
                try:
                    in_grads = node.apply(node_grads)
                except Exception as exc:
                    anomaly.report_backward_failure(node, exc)
                    raise
                anomaly.check_nan(node, in_grads)
                for hook in list(node._hooks.values()):
                    new = hook(tuple(in_grads), tuple(node_grads))
                    if new is not None:
                        in_grads = list(new)
                executed.append(node)
            for i, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = in_grads[i] if i < len(in_grads) else None
                if g is not None:
                    buf = buffers.setdefault(nxt, [None] * max(nxt.num_outputs, nr + 1))
                    buf[nr] = _add(buf[nr], g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt._seq_nr, id(nxt), nxt))
    if not retain_graph:
        for node in _iter_nodes(root_nodes):
            node.release()
    if not accumulate:
        for pos, t in enumerate(inputs):
            if results[pos] is None and not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
        if not create_graph:
            results = [r.detach() if r is not None else None for r in results]
        return tuple(results)
    return None


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (PyTorch semantics)."""
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` without touching ``.grad``."""
    from .. import creation

    single = not isinstance(inputs, (tuple, list))
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    res = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs, accumulate=False,
                       allow_unused=allow_unused)
    if materialize_grads:
        res = tuple(r if r is not None else creation.zeros_like(t) for r, t in zip(res, inputs))
    return res


def accumulate_into_leaf(var, g, create_graph=None, run_hooks=True):
    """PyTorch's AccumulateGrad: steal or copy the first gradient, add later ones in place
    (or out of place under create_graph, so that .grad carries a graph)."""
    from ..tensor import Tensor

    if g is None:
        return
    if create_graph is None:
        create_graph = grad_mode.is_grad_enabled()
    current = var.grad if var.is_leaf else var._grad
    if current is None:
        new = g if create_graph else g.detach()
        if not create_graph and (new._base is not None or new is g):
            new = new.clone() if new._base is not None else new
        _set_grad(var, new)
    elif create_graph:
        _set_grad(var, current + g)
    else:
        with grad_mode.no_grad():
            current.add_(g)
    if run_hooks and var._post_acc_hooks:
        for hook in list(var._post_acc_hooks.values()):
            hook(var)


def _set_grad(var, value):
    if var.is_leaf:
        var.grad = value
    else:
        var._grad = value
