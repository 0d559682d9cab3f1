"""Anomaly detection for the autograd engine (mirrors ``torch.autograd.detect_anomaly``).

In anomaly mode every Node remembers the Python stack of the forward call that created it.
When its backward fails, a warning shows that forward traceback; with ``check_nan`` a
backward function that returns NaN raises ``RuntimeError`` naming it and the output index.

>>> import tracegrad as tg
>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with tg.autograd.detect_anomaly():
...         x = tg.tensor([0.0, 1.0], requires_grad=True)
...         y = (x * 0 + (x * 0).sqrt()).sum()
...         y.backward()
Traceback (most recent call last):
RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.
"""
from __future__ import annotations

import os
import traceback
import warnings

import numpy as np

from ..core import tracing as trace

# Global like PyTorch's AnomalyMode (not thread-local); the engine reads them on every node.
_enabled = False
_check_nan = True

ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
                   "should only be enabled for debugging.")
NO_FORWARD_INFO = ("No forward pass information available. Enable detect anomaly during forward "
                   "pass for more information.")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # (tracegrad/)


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def _set(enabled, check_nan):
    global _enabled, _check_nan
    _enabled, _check_nan = bool(enabled), bool(check_nan)


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine.

    - Backward errors print (as a ``UserWarning``) the traceback of the forward operation that
      created the failing backward function.
    - With ``check_nan=True`` a backward computation that produces NaN raises an error.
    """

    def __init__(self, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn(ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Turn anomaly detection on or off: effective immediately (a plain call works), and
    restored when used as a context manager and the block ends."""

    def __init__(self, mode, check_nan=True):
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        _set(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)


def compile_blocker():
    """Why ``tg.compile`` runs a call eagerly in anomaly mode, or None. A compiled backward is
    one node: it can neither name the op that produced a NaN nor show its forward traceback, so
    anomaly mode (a debugging mode) runs the function eagerly, checked at every call."""
    if _enabled:
        return ("anomaly detection is enabled (its per-op NaN checks and forward tracebacks need "
                "eager autograd nodes)")
    return None


# ----------------------------------------------------------------------------- engine hooks
def record_forward_trace(node):
    """Called when a Node is created: remember the user's stack (tracegrad frames dropped)."""
    if not _enabled:
        return
    stack = traceback.extract_stack()[:-1]
    node._anomaly_trace = traceback.StackSummary.from_list(
        [f for f in stack if not os.path.abspath(f.filename).startswith(_PACKAGE_DIR)])


def _forward_trace_text(node):
    trace = getattr(node, "_anomaly_trace", None)
    if trace is None:
        return None
    return "".join(trace.format())


def report_backward_failure(node, exc):
    """Called by the engine when ``node``'s backward raised ``exc``."""
    if not _enabled or getattr(exc, "_tg_anomaly_reported", False):
        return
    try:
        exc._tg_anomaly_reported = True  # nested backward calls report an error once
    except AttributeError:
        pass
    text = _forward_trace_text(node)
    if text is None:
        warnings.warn(NO_FORWARD_INFO, UserWarning, stacklevel=2)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{text}", UserWarning, stacklevel=2)


def check_nan(node, grads):
    """Called by the engine with the gradients ``node`` produced; raises on NaN."""
    if not (_enabled and _check_nan):
        return
    for i, g in enumerate(grads):
        if g is None:
            continue
        if g._is_traced:
            trace.graph_break("anomaly mode checks backward results for NaN (needs concrete values)")
        if g.dtype.is_floating_point and np.isnan(g._value).any():
            err = RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
            report_backward_failure(node, err)
            raise err
