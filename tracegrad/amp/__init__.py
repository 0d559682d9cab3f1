"""Automatic mixed precision on CPU, as ``torch.autocast`` / ``torch.amp``: inside an enabled
``autocast`` region, the ops PyTorch's CPU autocast runs in lower precision (matrix products,
``linear``, convolutions, ``prelu``, ``scaled_dot_product_attention``) cast their floating
arguments to the region's dtype (bfloat16 by default, or float16), and the ops it runs in
float32 (the losses, ``prod``, ``cdist``, ``trace``, ``quantile``, linear algebra) cast theirs
to float32.
float64 tensors are never cast, as in PyTorch. Regions nest (``enabled=False`` turns autocast
off inside one) and are per thread; the state is part of a compiled function's guards.

>>> import tracegrad as tg
>>> layer = tg.nn.Linear(4, 3)
>>> with tg.autocast("cpu"):
...     out = layer(tg.ones(2, 4))
...     loss = tg.nn.functional.mse_loss(out, tg.zeros(2, 3))
>>> out.dtype, loss.dtype, layer.weight.dtype
(tracegrad.bfloat16, tracegrad.float32, tracegrad.float32)
"""
from __future__ import annotations

import functools
import threading
import warnings

from ..core import dtypes as _dt

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd", "GradScaler"]

_local = threading.local()
_active = 0  # autocast regions open on any thread: while 0, every check is one global read


def state():
    """The dtype of this thread's innermost enabled autocast region, or None (a guard of every
    compiled function: a program traced in one state is not reused in another)."""
    return getattr(_local, "dtype", None) if _active else None


def is_autocast_available(device_type):
    return device_type == "cpu"


def is_autocast_enabled(device_type=None):
    """Whether an enabled autocast region for ``device_type`` is open on this thread: only "cpu"
    can be (without an argument PyTorch asks about CUDA: False)."""
    return device_type == "cpu" and state() is not None


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on ``device_type``: the innermost region's, else the default
    (bfloat16 on the CPU, float16 elsewhere)."""
    return state() or (_dt.bfloat16 if device_type == "cpu" else _dt.float16)


def is_autocast_cpu_enabled():
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    return get_autocast_dtype("cpu")


class autocast:
    """``with autocast(device_type, dtype=None, enabled=True, cache_enabled=None):`` or as a
    decorator. ``device_type`` "cpu" (dtype bfloat16 by default, or float16); "cuda" is
    disabled with PyTorch's warning, as on a machine without CUDA."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in ("cpu", "cuda", "mps", "xpu", "hpu", "xla", "ipu", "mtia"):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _dt.to_dtype(dtype) if dtype is not None else (
            _dt.bfloat16 if device_type == "cpu" else _dt.float16)
        if enabled and device_type != "cpu":
            warnings.warn(f"User provided device_type of '{device_type}', but {device_type.upper()} is not "
                          "available. Disabling", UserWarning, stacklevel=2)
            enabled = False
        if enabled and self.fast_dtype not in (_dt.bfloat16, _dt.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        global _active
        self._outer = getattr(_local, "dtype", None)
        _local.dtype = self.fast_dtype if self._enabled else None
        _active += 1
        return self

    def __exit__(self, *exc):
        global _active
        _local.dtype = self._outer
        _active -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def in_region(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return in_region


def _cast_floats(value, dtype):
    """``value`` with its floating tensors (not float64) cast to ``dtype``: tensors, and those
    in lists and tuples (``cat``-like arguments)."""
    from .._api.functional import cast
    from ..core.tensor import Tensor

    if isinstance(value, Tensor):
        eligible = value.dtype.is_floating_point and value.dtype is not _dt.float64
        return cast(value, dtype) if eligible and value.dtype is not dtype else value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast_floats(v, dtype) for v in value)
    return value


def _casting(target):
    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            dtype = outer = state()
            if dtype is None:
                return fn(*args, **kwargs)
            dtype = dtype if target is None else target
            args = [_cast_floats(a, dtype) for a in args]
            kwargs = {k: _cast_floats(v, dtype) for k, v in kwargs.items()}
            _local.dtype = None  # the op's own inner ops are not cast again (as PyTorch's)
            try:
                return fn(*args, **kwargs)
            finally:
                _local.dtype = outer
        return op
    return decorate


lower_precision = _casting(None)  # ops PyTorch's CPU autocast runs in its dtype
float32 = _casting(_dt.float32)  # ops it runs in float32 (linear algebra included)


# ----------------------------------------------------------------------------- custom Functions
def custom_fwd(fwd=None, *, device_type="cpu", cast_inputs=None):
    """For a custom Function's ``forward``: with ``cast_inputs`` (a dtype), inside an autocast
    region the floating arguments are cast to it and forward runs with autocast off; the region's
    state is recorded for ``custom_bwd``."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(ctx, *args, **kwargs):
        ctx._fwd_autocast = state()
        if cast_inputs is None or ctx._fwd_autocast is None:
            return fwd(ctx, *args, **kwargs)
        with autocast(device_type, enabled=False):
            return fwd(ctx, *[_cast_floats(a, _dt.to_dtype(cast_inputs)) for a in args],
                       **{k: _cast_floats(v, _dt.to_dtype(cast_inputs)) for k, v in kwargs.items()})
    return forward


def custom_bwd(bwd=None, *, device_type="cpu"):
    """For a custom Function's ``backward``: runs in the autocast state its forward ran in."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *grads):
        dtype = getattr(ctx, "_fwd_autocast", None)
        with autocast(device_type, dtype=dtype, enabled=dtype is not None):
            return bwd(ctx, *grads)
    return backward


from .grad_scaler import GradScaler
