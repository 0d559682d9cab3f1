"""``tg.testing`` (PyTorch's ``torch.testing``): ``assert_close`` with PyTorch's default
tolerances per dtype and its messages, and ``make_tensor`` for test inputs.

>>> import tracegrad as tg
>>> tg.testing.assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0000001]))
>>> tg.testing.make_tensor(2, 3, dtype=tg.float32, device="cpu", low=0, high=1).shape
tracegrad.Size([2, 3])
"""
from __future__ import annotations

import numbers

import numpy as np

from .core import creation
from .core import dtypes as _dt
from .core.tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

# PyTorch's defaults: (rtol, atol) by dtype; exact for integers and bools
_TOLERANCES = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` (tensors, numbers, or sequences
    and mappings of them) have the same structure, shapes and dtypes and values within
    ``atol + rtol * |expected|`` (PyTorch's defaults for the dtype when not given)."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, ())


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, msg, where):
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            _fail(f"The keys of the mappings do not match: {sorted(actual) if isinstance(actual, dict) else actual}"
                  f" != {sorted(expected)}.", msg, where)
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_dtype, msg, where + (k,))
        return
    if isinstance(expected, (list, tuple)) and not isinstance(expected, str):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            _fail(f"The length of the sequences mismatch: {len(actual) if hasattr(actual, '__len__') else actual} "
                  f"!= {len(expected)}", msg, where)
        for k, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, msg, where + (k,))
        return
    a, a_dtype = _as_array(actual)
    e, e_dtype = _as_array(expected)
    if isinstance(actual, Tensor) != isinstance(expected, Tensor):
        _fail(f"Comparing a Tensor and a {type(expected if isinstance(actual, Tensor) else actual).__name__} "
              "is not supported", msg, where)
    if a.shape != e.shape:
        _fail(f"The values for attribute 'shape' do not match: {_shape(a)} != {_shape(e)}.", msg, where)
    if check_dtype and a_dtype is not e_dtype:
        _fail(f"The values for attribute 'dtype' do not match: {a_dtype} != {e_dtype}.", msg, where)
    if rtol is None:
        rtol, atol = _TOLERANCES.get(e_dtype.name, (0.0, 0.0)) if isinstance(expected, Tensor) else \
            _TOLERANCES.get(a_dtype.name if isinstance(actual, Tensor) else "float64", (0.0, 0.0))
    _compare_values(a, e, rtol, atol, equal_nan, msg, where, "Tensor-likes" if a.ndim or isinstance(
        expected, Tensor) else "Scalars")


def _as_array(x):
    if isinstance(x, Tensor):
        return np.asarray(x.detach().numpy()), x.dtype
    if isinstance(x, (numbers.Number, np.ndarray, np.generic)):
        arr = np.asarray(x)
        return arr, _dt.from_numpy_dtype(arr.dtype) if arr.dtype.kind in "biuf" else None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(x)}.")


def _shape(a):
    return f"tracegrad.Size({list(a.shape)})"


def _compare_values(a, e, rtol, atol, equal_nan, msg, where, kind):
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    if a.dtype == np.bool_ or e.dtype == np.bool_ or a.dtype.kind in "iu" and e.dtype.kind in "iu":
        ok = a == e
    else:
        ok = np.abs(a64 - e64) <= atol + rtol * np.abs(e64)
        ok |= a64 == e64  # (infinities of the same sign)
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
    if np.all(ok):
        return
    bad = ~ok
    diff = np.abs(a64 - e64)
    rel = np.where(e64 != 0, diff / np.abs(e64), np.inf)
    lines = [f"{kind} are not {'equal' if rtol == 0 and atol == 0 else 'close'}!", ""]
    if a.ndim:
        lines.append(f"Mismatched elements: {int(bad.sum())} / {a.size} ({100 * bad.mean():.1f}%)")
        i_abs = np.unravel_index(np.nanargmax(np.where(bad, diff, -1)), a.shape)
        i_rel = np.unravel_index(np.nanargmax(np.where(bad, rel, -1)), a.shape)
        lines.append(f"Greatest absolute difference: {diff[i_abs]} at index {tuple(int(i) for i in i_abs)} "
                     f"(up to {atol} allowed)")
        lines.append(f"Greatest relative difference: {rel[i_rel]} at index {tuple(int(i) for i in i_rel)} "
                     f"(up to {rtol} allowed)")
    else:
        lines.append(f"Expected {e64.item()} but got {a64.item()}.")
        lines.append(f"Absolute difference: {diff.item()} (up to {atol} allowed)")
        lines.append(f"Relative difference: {rel.item()} (up to {rtol} allowed)")
    _fail("\n".join(lines), msg, where)


def _fail(text, msg, where):
    if where:
        text += f"\n\nThe failure occurred for item {''.join(f'[{w!r}]' for w in where)}"
    if callable(msg):
        text = msg(text)
    elif msg is not None:
        text = msg
    raise AssertionError(text)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` with values uniform in [low, high) (PyTorch's defaults: [-9, 9)
    for floats, [-9, 10) for integers, random for bool), drawn from the global generator on
    the host and placed on ``device`` (the default device when None)."""
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = tuple(shape[0])
    dtype = _dt.to_dtype(dtype)
    rng = creation.default_generator.rng
    if dtype is _dt.bool_:
        values = rng.random(shape) < 0.5
    elif dtype.is_floating_point:
        lo, hi = -9.0 if low is None else float(low), 9.0 if high is None else float(high)
        if lo > hi:
            raise ValueError(f"`low` must be less than or equal to `high`, but got {lo} and {hi}")
        values = rng.uniform(lo, hi, shape)
        if exclude_zero:
            values[values == 0] = _dt.finfo(dtype).tiny
    else:
        lo, hi = -9 if low is None else int(np.ceil(low)), 10 if high is None else int(np.ceil(high))
        values = rng.integers(lo, max(hi, lo + 1), shape)
        if exclude_zero:
            values[values == 0] = 1
    t = creation.tensor(np.asarray(values).astype(dtype.np), dtype=dtype, device=device)
    return t.requires_grad_(True) if requires_grad else t
