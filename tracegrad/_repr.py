"""PyTorch-style tensor repr: ``tensor([1., 2.], requires_grad=True)``."""
from __future__ import annotations

import numpy as np

from . import dtypes as _dt


def _float_formatter(a):
    finite = a[np.isfinite(a)]
    if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    big = finite.size and (np.abs(finite).max() >= 1e8 or
                           (np.abs(finite[finite != 0]).min() < 1e-4 if np.any(finite != 0) else False))
    if big:
        return lambda v: f"{v:.4e}"
    return lambda v: f"{v:.4f}" if np.isfinite(v) else str(v)


def tensor_repr(t):
    suffix = []
    if t._is_traced:
        body = f"<traced {t.dtype.short}{list(t.shape)}>"
    else:
        a = t._value
        if a.dtype.kind == "f":
            fmt = {"float_kind": _float_formatter(a)}
        elif a.dtype.kind == "b":
            fmt = {"bool": lambda v: "True" if v else "False"}
        else:
            fmt = None
        body = np.array2string(a, separator=", ", prefix="tensor(", formatter=fmt,
                               threshold=1000, edgeitems=3, max_line_width=80)
        if a.size == 0:
            body = "[]"
            suffix.append(f"size={tuple(a.shape)}")
    default_float = _dt.get_default_dtype()
    if t.dtype not in (default_float, _dt.int64, _dt.bool_):
        suffix.append(f"dtype=tracegrad.{t.dtype.name}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffix) + ")"
