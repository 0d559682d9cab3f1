"""``backward_error``: the gradient a backward rule refused to give while a compiled function's
backward was being derived (igamma's derivative for ``a``, a custom Function's backward that
raises, a saved tensor modified in place...). Eager mode raises such an error only when
``.backward()`` runs, and only if that gradient is needed; so the differentiation pass
(``ir/autodiff.py``) records this op in its place, carrying the exception, and the compiled
forward succeeds. The op computes zeros; ``program.CompiledBackward`` raises the recorded
exception before running the backward, when the engine needs a gradient that depends on it.
"""
from __future__ import annotations

import numpy as np

from .registry import defop

# the exception types a backward rule's failure is deferred for (what eager raises at backward)
DEFERRED = {"NotImplementedError": NotImplementedError, "RuntimeError": RuntimeError}


def _infer(g, shape, dtype, error, message):
    if error not in DEFERRED:
        raise ValueError(f"backward_error: unknown exception type {error!r}")
    return tuple(shape), dtype


BACKWARD_ERROR = defop(
    "backward_error", infer=_infer, differentiable=False,
    # (the incoming gradient is an input only to place the op in the backward program)
    impl=lambda g, shape, dtype, error, message: np.zeros(shape, dtype.np))


def raise_recorded(error, message):
    raise DEFERRED[error](message)
