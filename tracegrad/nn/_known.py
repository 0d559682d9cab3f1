"""``known_values``: the values of a tensor when Python may read them without a cost to a
compiled function: always eagerly; while tracing, only for a constant of the trace (made in the
traced function, the same at every trace). Layouts and loop bounds that depend on values (the
batch sizes of packed sequences, the longest CTC target) are made of these.

>>> import tracegrad as tg
>>> from tracegrad.nn._known import known_values
>>> known_values(tg.tensor([3, 1]))
array([3, 1])
"""
from __future__ import annotations

import numpy as np

from ..core import tracing as trace


def known_values(t):
    """The ndarray of ``t``'s values, or None while tracing when ``t`` is not a constant of the
    trace (an argument, or a tensor read from outside: reading it would break the graph or
    bake its values into the program)."""
    if trace.current_tracer() is None:
        return np.asarray(t._value)
    if getattr(t._value, "is_constant", False) and t._value.data is not None:
        return np.asarray(t._value.data)
    return None
