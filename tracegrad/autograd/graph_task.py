"""Which backward call is running on this thread (PyTorch's GraphTask stack), asked by hooks
and Nodes while it runs: ``current_graph_task_id``, ``will_engine_execute_node``,
``is_checkpoint_valid``.

The engine pushes each call's task here (``push``/``pop``); the Nodes of ``graph`` read it without
importing the engine, which stands above them.

>>> from tracegrad.autograd.graph_task import current_graph_task_id
>>> current_graph_task_id()  # (outside backward)
-1
"""
from __future__ import annotations

import threading

_tasks = threading.local()


def push(task) -> None:
    """``task`` is the backward call in progress on this thread until ``pop`` (a task has
    ``id``, ``accumulate``, ``needed``, ``reaches(node)`` and ``will_execute(node)``)."""
    _tasks.__dict__.setdefault("stack", []).append(task)


def pop() -> None:
    _tasks.stack.pop()


def is_checkpoint_valid() -> bool:
    """Whether the backward running on this thread accumulates into every leaf (``backward()``
    without ``inputs``), which a reentrant checkpoint needs (PyTorch's
    ``torch.autograd._is_checkpoint_valid``)."""
    stack = getattr(_tasks, "stack", None)
    return not stack or (stack[-1].accumulate and stack[-1].needed is None)


def current_graph_task_id() -> int:
    """The id of the backward call running on this thread, or -1 outside backward."""
    stack = getattr(_tasks, "stack", None)
    return stack[-1].id if stack else -1


def will_engine_execute_node(node) -> bool:
    """Whether the backward call in progress will run ``node`` (PyTorch's
    ``torch._C._will_engine_execute_node``); only valid inside backward (e.g. in a hook)."""
    stack = getattr(_tasks, "stack", None)
    if not stack:
        raise RuntimeError("will_engine_execute_node should only be called during the backward pass")
    task = stack[-1]
    return task.reaches(node) and task.will_execute(node)
