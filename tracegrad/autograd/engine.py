"""The backward engine: ``backward`` and ``grad`` walk the Node graph from the roots, run each
node's VJP once all its gradients have arrived, and accumulate into leaves.

The order of work at one node follows PyTorch: tensor hooks (``Tensor.register_hook``), then
retained gradients (``retain_grad``), then node pre-hooks, then capture for ``grad``/``inputs=``,
then the node itself, then its post-hooks.

>>> import tracegrad as tg
>>> x = tg.tensor(3.0, requires_grad=True)
>>> (g,) = tg.autograd.grad(x ** 3, x, create_graph=True)
>>> tg.autograd.grad(g, x)[0]
tensor(18.)
"""
from __future__ import annotations

import heapq
import itertools
import warnings

from ..core import creation
from ..core.tensor import Tensor
from . import anomaly, grad_mode, graph_task, profiler
from .graph import AccumulateGrad, GradientEdge, gradient_edge
# (re-exported: the engine's names for them, as PyTorch's; the Nodes read them where they live)
from .graph import accumulate_into_leaf  # noqa: F401
from .graph_task import current_graph_task_id, is_checkpoint_valid, will_engine_execute_node  # noqa: F401


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (Tensor, GradientEdge)):
        return (x,)
    return tuple(x)


def _root_grads(outputs, grad_outputs):
    """One starting gradient per output (PyTorch's ``_make_grads``): implicit ones for scalar
    outputs that require grad, given gradients checked against the outputs."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(
            f"grad_tensors should have the same length as tensors: got {len(grad_outputs)} "
            f"gradients for {len(outputs)} outputs"
        )
    result = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(out, GradientEdge):
            if not isinstance(g, Tensor):
                raise RuntimeError(f"output {i} is a GradientEdge: its gradient must be given in grad_outputs "
                                   "(an edge has no shape to make one from)")
            result.append(g)
            continue
        if not isinstance(out, Tensor):
            raise TypeError(f"tensors must be Tensors, but element {i} is {type(out).__name__}")
        if g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                g = creation.ones_like(out)
        elif isinstance(g, Tensor):
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            if g.dtype is not out.dtype:
                g = g.to(out.dtype)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        result.append(g)
    return result


def _topological_order(roots):
    """Every node reachable from ``roots``, each after all nodes that feed it a gradient, and
    the number of edges pointing at each node."""
    # (node._next_functions: the next_functions property's field, read without the property
    # call, here and in _propagate, which run once per node of every backward)
    deps, seen, stack = {}, set(), list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for nxt, _ in node._next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    remaining = dict(deps)
    order = []
    ready = [n for n in dict.fromkeys(roots) if remaining.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        order.append(node)
        for nxt, _ in node._next_functions:
            if nxt is not None:
                remaining[nxt] -= 1
                if remaining[nxt] == 0:
                    ready.append(nxt)
    return order, deps


def _nodes_needed(order, capture_nodes):
    """Nodes worth executing when only the gradients at ``capture_nodes`` are wanted: those
    from which a captured node can be reached (PyTorch's ``exec_info``)."""
    needed = set()
    for node in reversed(order):
        if any(nxt is not None and (nxt in capture_nodes or nxt in needed)
               for nxt, _ in node.next_functions):
            needed.add(node)
    return needed


def _pre_hooks(node, grads):
    """Tensor hooks, retained gradients and node pre-hooks, in PyTorch's order."""
    if isinstance(node, AccumulateGrad):
        var = node.variable
        if var._hooks and grads and grads[0] is not None:
            for hook in list(var._hooks.values()):
                new = hook(grads[0])
                if new is not None:
                    grads[0] = new
    else:
        for nr, hooks in node._tensor_hooks.items():
            if nr < len(grads) and grads[nr] is not None:
                for hook in list(hooks.values()):
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
        # (the tables below are tested before they are copied and walked: an empty one, the
        # usual case, runs nothing either way)
        if node._retain_grad_tensors:
            for nr, ref in list(node._retain_grad_tensors.items()):
                t = ref()
                g = grads[nr] if nr < len(grads) else None
                # a tensor modified in place since retain_grad() retains at its new grad_fn
                if t is None or g is None or t._grad_fn is not node or t._output_nr != nr:
                    continue
                t._grad = g.clone() if t._grad is None else t._grad + g
    if node._prehooks:
        for hook in list(node._prehooks.values()):
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    return grads


# Set by ir.autodiff.differentiate while it derives a compiled function's backward: a Node that
# fails then gives ``backward_error`` gradients instead (ops/deferred.py), so that the error
# surfaces at .backward(), as in eager mode, not at the compiled forward.
defer_errors = False


def _deferred_grads(node, grads, exc):
    """The placeholder gradients for a Node whose backward raised ``exc`` while a compiled
    backward is derived, or None (raise it now)."""
    # (lazy: a true cycle, ops stand above autograd: the registry records autograd.graph's
    # Nodes, and importing tracegrad.autograd imports this module; reached only on a failure)
    from ..ops.deferred import BACKWARD_ERROR, DEFERRED

    if not defer_errors or DEFERRED.get(type(exc).__name__) is not type(exc):
        return None  # (exactly those types: subclasses such as SavedTensorsFreed say other things)
    meta = getattr(node, "input_meta", None) or getattr(node, "_input_meta", None)
    g = next((g for g in grads if g is not None), None)
    if meta is None or g is None or len(meta) != len(node._next_functions):
        return None
    failed = range(len(meta))
    real = [None] * len(meta)
    op = getattr(node, "op", None)
    if type(exc) is NotImplementedError and op is not None and op.no_derivative:
        # a derivative PyTorch does not define (igamma's for a): the other inputs' gradients
        # are real, only those inputs' wait for .backward() to raise
        failed = op.no_derivative
        real = node.apply(grads, check_no_derivative=False)
    return [BACKWARD_ERROR(g, shape=tuple(m[0]), dtype=m[1], error=type(exc).__name__, message=str(exc))
            if i in failed and m is not None and nxt[0] is not None and m[1].is_floating_point else r
            for i, (m, nxt, r) in enumerate(zip(meta, node._next_functions, real))]


def _run_node(node, grads):
    try:
        in_grads = node.apply(grads) if not profiler._active else profiler.run_node(node, grads)
    except Exception as exc:
        in_grads = _deferred_grads(node, grads, exc)
        if in_grads is None:
            anomaly.report_backward_failure(node, exc)
            raise
    if anomaly._enabled:  # (check_nan does nothing otherwise)
        anomaly.check_nan(node, in_grads)
    if node._hooks:  # (none registered, the usual case: nothing to copy and walk)
        for hook in list(node._hooks.values()):
            new = hook(tuple(in_grads), tuple(grads))
            if new is not None:
                in_grads = list(new)
    return in_grads


class _GraphTask:
    """The backward call in progress (PyTorch's GraphTask), for ``current_graph_task_id`` and
    ``will_engine_execute_node`` (used by ``register_multi_grad_hook``)."""

    _ids = itertools.count()

    def __init__(self, order, needed, capture_nodes, accumulate):
        self.id = next(_GraphTask._ids)
        self._order, self._reachable = order, None
        self.needed, self.capture_nodes, self.accumulate = needed, capture_nodes, accumulate

    def will_execute(self, node):
        """Whether this backward runs ``node`` (or captures the gradient flowing into it)."""
        if node in self.capture_nodes:
            return True
        if isinstance(node, AccumulateGrad):
            return self.accumulate and self.needed is None
        return self.needed is None or node in self.needed

    def reaches(self, node):
        if self._reachable is None:
            self._reachable = set(self._order)
        return node in self._reachable

    def __enter__(self):
        graph_task.push(self)
        return self

    def __exit__(self, *exc):
        graph_task.pop()


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _capture_edges(inputs, accumulate):
    """(node, input_nr) -> positions in ``inputs`` whose gradient arrives at that edge."""
    capture = {}
    for pos, t in enumerate(inputs or ()):
        if isinstance(t, GradientEdge):
            if accumulate and not isinstance(t.node, AccumulateGrad):
                raise RuntimeError("backward(inputs=...) takes the GradientEdge of a leaf (its gradient is "
                                   "accumulated into the leaf's .grad); use autograd.grad for other edges")
            capture.setdefault((t.node, t.output_nr), []).append(pos)
            continue
        if accumulate:
            # backward(inputs=[non-leaf]) fills its .grad the way retain_grad does (as PyTorch)
            t.retain_grad()
        edge = gradient_edge(t)
        if edge is None:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(edge, []).append(pos)
    return capture


def _propagate(node, in_grads, buffers, deps, ready):
    """Add ``node``'s input gradients into its successors' buffers; queue those now complete
    (the most recently created node first, as PyTorch does)."""
    for i, (nxt, nr) in enumerate(node._next_functions):
        if nxt is None:
            continue
        g = in_grads[i] if i < len(in_grads) else None
        if g is not None:
            buf = buffers.setdefault(nxt, [None] * max(nxt.num_outputs, nr + 1))
            buf[nr] = _add(buf[nr], g)
        deps[nxt] -= 1
        if deps[nxt] == 0:
            heapq.heappush(ready, (-nxt._seq_nr, id(nxt), nxt))


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs, accumulate,
                 allow_unused=False):
    """The engine. With ``accumulate`` it accumulates into leaves (``backward``; non-leaf
    ``inputs`` retain their grad); otherwise it returns the gradients flowing into ``inputs``
    (``grad``)."""
    outputs = _as_tuple(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _root_grads(outputs, _as_tuple(grad_outputs))
    root_edges = []
    for i, out in enumerate(outputs):
        edge = gradient_edge(out)
        if edge is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        root_edges.append(edge)

    capture = _capture_edges(inputs, accumulate)
    capture_nodes = {node for node, _ in capture}

    roots = [node for node, _ in root_edges]
    order, deps = _topological_order(roots)
    needed = _nodes_needed(order, capture_nodes) if inputs is not None else None

    buffers = {}
    for (node, nr), g in zip(root_edges, grads):
        buf = buffers.setdefault(node, [None] * max(node.num_outputs, nr + 1))
        buf[nr] = _add(buf[nr], g)
    ready = []
    for node in dict.fromkeys(roots):
        if deps.get(node, 0) == 0:
            heapq.heappush(ready, (-node._seq_nr, id(node), node))

    results = [None] * len(inputs or ())
    executed = []
    task = _GraphTask(order, needed, capture_nodes, accumulate)
    with grad_mode.set_grad_enabled(create_graph), task:
        while ready:
            _, _, node = heapq.heappop(ready)
            node_grads = buffers.pop(node, None) or [None] * node.num_outputs
            if task.will_execute(node):  # hooks of nodes this backward skips do not fire
                node_grads = _pre_hooks(node, node_grads)
            is_acc = isinstance(node, AccumulateGrad)
            if not accumulate:
                for nr, g in enumerate(node_grads):
                    for pos in capture.get((node, nr), ()):
                        results[pos] = g
            if is_acc:
                run = accumulate and (needed is None or node in capture_nodes)
            else:
                run = needed is None or node in needed
            in_grads = []
            if run:
                in_grads = _run_node(node, node_grads)
                executed.append(node)
            _propagate(node, in_grads, buffers, deps, ready)
    if not retain_graph:
        for node in executed:
            node.release()
    if accumulate:
        return None
    for pos in range(len(results)):
        if results[pos] is None and not allow_unused:
            raise RuntimeError(
                "One of the differentiated Tensors appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            )
    return tuple(results)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad`` (PyTorch semantics).

    >>> import tracegrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> tg.autograd.backward([(x * x).sum()])
    >>> x.grad
    tensor([2., 4.])
    """
    if grad_variables is not None:  # PyTorch's deprecated name of grad_tensors
        if grad_tensors is not None:
            raise RuntimeError("'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
                               "backward(). Please only use 'grad_tensors'.")
        warnings.warn("'grad_variables' is deprecated. Please use 'grad_tensors' instead.", FutureWarning,
                      stacklevel=2)
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Return the gradients of ``outputs`` with respect to ``inputs`` without touching ``.grad``.

    >>> import tracegrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> tg.autograd.grad((x ** 2).sum(), x)
    (tensor([2., 4.]),)
    """
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if is_grads_batched:
        res = _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused)
    else:
        res = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                           accumulate=False, allow_unused=allow_unused)
    if materialize_grads:
        res = tuple(r if r is not None else creation.zeros_like(t).requires_grad_(create_graph)
                    for r, t in zip(res, inputs))
    return res


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused):
    """``is_grads_batched=True``: the first dimension of every grad_output is a batch of
    vectors; one backward per vector, results stacked (PyTorch vectorises the same loop)."""
    # (lazy: a true cycle, the ops stand above autograd: the registry records its Nodes)
    from ..ops import helpers as H

    outputs = _as_tuple(outputs)
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is None or any(g is None for g in grad_outputs):
        raise RuntimeError("is_grads_batched=True needs a batched grad_output for every output")
    n = grad_outputs[0].shape[0]
    per = [run_backward(outputs, [g[b] for g in grad_outputs], True if b < n - 1 else retain_graph,
                        create_graph, inputs, accumulate=False, allow_unused=allow_unused)
           for b in range(n)]
    return tuple(None if per[0][i] is None else H.stack([p[i] for p in per])
                 for i in range(len(inputs)))
