"""Tracer hooks used by the eager core. The tracer itself is installed by the compiler;
while none is active every op runs eagerly."""
from __future__ import annotations

import threading

_state = threading.local()


def current_tracer():
    return getattr(_state, "tracer", None)


class GraphBreak(Exception):
    """Raised inside a trace when the function cannot be captured; carries the reason."""

    def __init__(self, reason, where=None):
        super().__init__(reason)
        self.reason = reason
        self.where = where


def graph_break(reason):
    if current_tracer() is not None:
        raise GraphBreak(reason)
