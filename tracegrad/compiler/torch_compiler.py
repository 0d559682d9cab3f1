"""PyTorch's ``torch.compiler`` helpers, on ``tg.compiler``: ``reset`` (forget every compiled
program), ``is_compiling`` (inside a trace?), ``disable`` (a function never traced: a compiled
caller runs eagerly there, with a graph-break warning), ``allow_in_graph`` and
``assume_constant_result`` (tracegrad traces through Python calls, so these keep the function as
it is), ``list_backends``.

>>> import tracegrad as tg
>>> @tg.compile
... def f(x):
...     return x * 2 if not tg.compiler.is_compiling() else x * 3
>>> float(f(tg.ones(1))[0])
3.0
"""
from __future__ import annotations

import functools
import weakref

from .ir import trace

__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "disable", "allow_in_graph", "assume_constant_result",
           "list_backends"]

_instances = weakref.WeakSet()  # every CompiledFunction (compiler.CompiledFunction registers itself)


def reset():
    """Forget the programs of every compiled function (the disk cache stays): each traces anew
    at its next call, as after ``torch.compiler.reset()``."""
    for compiled in list(_instances):
        compiled.programs.clear()
        compiled.breaks.clear()
        compiled._hit, compiled._eager, compiled._warned_limit = None, False, False


def is_compiling():
    """True while ``tg.compile`` (or ``tg.export``, vmap's tracer) is tracing the caller."""
    return trace.current_tracer() is not None


is_dynamo_compiling = is_compiling


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` never traced: called inside a compiled function it makes that call run eagerly
    (a graph break naming ``fn`` and ``reason``; ``fullgraph=True`` raises). Usable as a
    decorator, with or without arguments."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if trace.current_tracer() is not None:
            why = f"{getattr(fn, '__qualname__', fn)} is marked tg.compiler.disable"
            trace.graph_break(why + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)

    wrapped._tg_disabled = True
    return wrapped


def allow_in_graph(fn):
    """``fn`` itself: tracegrad traces into Python calls, so every traceable function is in the
    graph already."""
    return fn


def assume_constant_result(fn):
    """``fn`` itself: a Python result computed while tracing (not from traced tensors) is
    already a constant of the program."""
    return fn


def list_backends(exclude_tags=("debug", "experimental")):
    """The backends ``tg.compile`` can build with on this machine."""
    from .api import BACKENDS

    return sorted(BACKENDS)
