"""``register_multi_grad_hook`` (exported from ``tg.autograd.graph``), as in PyTorch.

>>> import tracegrad as tg
>>> a = tg.rand(2, 3, requires_grad=True)
>>> b = tg.rand(2, 3, requires_grad=True)
>>> c = a * b
>>> d = a * b
>>> seen = []
>>> h = register_multi_grad_hook((a, b, c, d), lambda grads: seen.append([g is not None for g in grads]))
>>> c.sum().backward(retain_graph=True)
>>> c.sum().backward(inputs=(a,), retain_graph=True)
>>> seen
[[True, True, True, False], [True, False, True, False]]
"""
from __future__ import annotations

import functools
import threading

from . import graph_task
from .graph import AccumulateGrad, RemovableHandle


class _MultiHandle(RemovableHandle):
    """Removes every per-tensor hook that makes up one multi-grad hook."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()


def _grad_fn_or_grad_acc(t):
    if t.requires_grad and t.grad_fn is None:
        return AccumulateGrad.of(t)
    if t.grad_fn is None:
        raise RuntimeError("register_multi_grad_hook: every tensor must require grad "
                           "(got one that does not)")
    return t.grad_fn


def _task_id():
    task_id = graph_task.current_graph_task_id()
    if task_id == -1:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task_id


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Register ``fn`` to run once per backward pass over ``tensors``.

    ``mode="all"``: ``fn(grads)`` runs after the gradients of every tensor that this backward
    computes have arrived; ``grads`` holds None for tensors outside the graph or not needed for
    the requested ``inputs``. ``mode="any"``: ``fn(grad)`` runs with the first gradient computed
    for any of the tensors. Returns a handle whose ``remove()`` unregisters the hook."""
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    if mode == "any":
        ran = {}

        @functools.wraps(fn)
        def first_only(grad):
            task = _task_id()
            with lock:
                prev, ran[task] = ran.get(task, False), True
            if not prev:
                fn(grad)

        return _MultiHandle(t.register_hook(first_only) for t in tensors if t.requires_grad)

    grad_fns = [_grad_fn_or_grad_acc(t) for t in tensors]
    count, buffer, expected = {}, {}, {}

    def inner_hook(idx):
        def hook(grad):
            task = _task_id()
            with lock:
                seen = count.get(task, 0)
                count[task] = seen + 1
                if seen == 0:
                    # the gradients this backward will produce, decided on the first call
                    expected[task] = sum(graph_task.will_engine_execute_node(g) for g in grad_fns)
                    buffer[task] = [None] * len(tensors)
            buffer[task][idx] = grad
            if seen == expected[task] - 1:
                grads = buffer.pop(task)
                del count[task], expected[task]
                fn(grads)

        return hook

    return _MultiHandle(t.register_hook(inner_hook(i)) for i, t in enumerate(tensors))
