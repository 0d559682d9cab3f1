"""The tracing hook, the one thing every layer needs to know of the compiler: which tracer (if
any) is recording this thread's operations, how to break a trace with a reason, and the
context managers that switch tracing on and off. The Tracer itself lives in
``compiler/ir/trace.py``.
"""
from __future__ import annotations

import contextlib
import linecache
import os
import sys
import sysconfig
import threading

# tracegrad's own directory: frames inside it are not the user's (graph-break locations)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _TraceState(threading.local):
    """The active tracer of this thread; ``None``, the class attribute, where none is (read by
    every eager op: found without the exception a missing thread-local attribute costs, which
    made this 0.68 -> 0.1 us)."""

    tracer = None


_state = _TraceState()


def current_tracer():
    return _state.tracer


class GraphBreak(Exception):
    """Raised inside a trace when the function cannot be captured; carries the reason and the
    user's source line that caused it."""

    def __init__(self, reason, where=None):
        super().__init__(reason if where is None else f"{reason} (at {where})")
        self.reason = reason
        self.where = where


def graph_break(reason):
    """Abort the active trace (no-op when not tracing)."""
    if current_tracer() is not None:
        raise GraphBreak(reason, _user_location())


def _user_location():
    """'file.py:LINE: source' of the innermost frame outside tracegrad."""
    pkg = _PACKAGE_DIR
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(pkg + os.sep):
            line = linecache.getline(fn, f.f_lineno).strip()
            return f"{os.path.basename(fn)}:{f.f_lineno}: {line}"
        f = f.f_back
    return None


@contextlib.contextmanager
def tracing(tracer):
    prev = current_tracer()
    _state.tracer = tracer
    try:
        yield tracer
    finally:
        _state.tracer = prev


@contextlib.contextmanager
def paused():
    """Run the block eagerly even inside a trace: its ops execute on concrete tensors and are
    not recorded. For work that must happen once, when the function is first traced, and not
    at every run of the program (a lazy module creating and initialising its parameters)."""
    prev = current_tracer()
    _state.tracer = None
    try:
        yield
    finally:
        _state.tracer = prev


# ------------------------------------------------------------ what changed, where code lives
STATE_EPOCH = [0]  # bumped by every change to a tg.nn.Module (nn/modules/module.py)


def bump():
    """Record that some module's state changed: guards on module state compare it again."""
    STATE_EPOCH[0] += 1


_PKG = _PACKAGE_DIR + os.sep
_STDLIB = tuple({os.path.abspath(p) + os.sep for p in
                 (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib"))
                 if p})


def library_file(filename: str) -> bool:
    """Whether code from ``filename`` is tracegrad's or the standard library's (not the
    user's)."""
    if filename.startswith("<"):  # <frozen ...> is the standard library; <string>, <doctest> not
        return filename.startswith("<frozen")
    path = os.path.abspath(filename)
    return path.startswith(_PKG) or path.startswith(_STDLIB)


_trusted_file = library_file
