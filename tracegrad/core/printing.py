"""PyTorch-style tensor repr, following ``torch._tensor_str`` with its default print options
(precision 4, threshold 1000, edgeitems 3, linewidth 80).

>>> import tracegrad as tg
>>> tg.tensor([[1.5, -2.0], [30.0, 4.25]], requires_grad=True)
tensor([[ 1.5000, -2.0000],
        [30.0000,  4.2500]], requires_grad=True)
"""
from __future__ import annotations

import math

import numpy as np

from . import dtypes as _dt

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
SCI_MODE = None  # None: chosen from the values; True/False: forced (set_printoptions)
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """PyTorch's print options for tensor reprs: digits after the point, the element count
    above which a repr is summarized, the items kept at each edge then, the line width;
    ``profile`` ("default", "short", "full") sets the first four; ``sci_mode`` forces (True) or
    forbids (False) scientific notation, None lets the values choose.

    >>> import tracegrad as tg
    >>> tg.set_printoptions(precision=2)
    >>> tg.tensor([1.23456])
    tensor([1.23])
    >>> tg.set_printoptions(profile="default")
    """
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    PRECISION = PRECISION if precision is None else precision
    THRESHOLD = THRESHOLD if threshold is None else threshold
    EDGEITEMS = EDGEITEMS if edgeitems is None else edgeitems
    LINEWIDTH = LINEWIDTH if linewidth is None else linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """Chooses integer / fixed / scientific notation and one width for all elements."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci_mode, self.max_width = floating, True, False, 1
        flat = values.reshape(-1)
        if not floating:
            self.max_width = max([len(self._plain(v)) for v in flat.tolist()] or [1])
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        lo, hi = np.abs(finite).min(), np.abs(finite).max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 if SCI_MODE is None else SCI_MODE
            widths = [len(f"{v:.{PRECISION}e}") if self.sci_mode else len(f"{v:.0f}") + 1
                      for v in finite.tolist()]
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4 if SCI_MODE is None else SCI_MODE
            fmt = "e" if self.sci_mode else "f"
            widths = [len(f"{v:.{PRECISION}{fmt}}") for v in finite.tolist()]
        self.max_width = max(widths)

    @staticmethod
    def _plain(v):
        return str(bool(v)) if isinstance(v, (bool, np.bool_)) else str(v)

    def format(self, v):
        if not self.floating:
            s = self._plain(v)
        elif self.sci_mode:
            s = f"{v:{self.max_width}.{PRECISION}e}"
        elif self.int_mode:
            s = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            s = f"{v:.{PRECISION}f}"
        return " " * (self.max_width - len(s)) + s


def _summarized(a):
    """The edge items PyTorch shows (and builds its formatter from) for large tensors."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        a = np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]])
    return np.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


def _vector(a, indent, summarize, fmt):
    per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        rows = ([_body(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                + [_body(a[i], indent + 1, summarize, fmt) for i in range(len(a) - EDGEITEMS, len(a))])
    else:
        rows = [_body(x, indent + 1, summarize, fmt) for x in a]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(text, suffixes, indent):
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    default = t.dtype in (_dt.get_default_dtype(), _dt.int64, _dt.bool_)
    if t._is_traced:
        body = f"<traced {t.dtype.short}{list(t.shape)}>"
    elif t.numel() == 0:
        body = "[]"
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
    else:
        a = t._value
        if t.device.type != "cpu":  # (a cuda tensor: its values copied back to print them)
            a = a.to_host()
        a = _dt.widen_bfloat16([a])[0]  # (NumPy's isfinite has no bfloat16 loop)
        summarize = a.size > THRESHOLD
        fmt = _Formatter(_summarized(a) if summarize else a, t.dtype.is_floating_point)
        body = _body(a, indent, summarize, fmt)
    if not t._is_traced and t.device.type != "cpu":  # (a cuda tensor's values were copied back)
        suffixes.append(f"device='{t.device}'")
    if not default:
        suffixes.append(f"dtype=tracegrad.{t.dtype.name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    from ..autograd import forward_ad  # (in the call: autograd stands above the Tensor and this)

    if forward_ad._state is not None and not t._is_traced:  # inside a dual_level, as PyTorch
        tangent = forward_ad.unpack_dual(t).tangent
        if tangent is not None:
            suffixes.append(f"tangent={tensor_repr(tangent)}")
    return _with_suffixes(prefix + body, suffixes, indent)


def tensor_format(t, spec):
    """``format(t, spec)``, PyTorch's Tensor.__format__: a 0-d plain Tensor formats as its
    Python number (``f"{loss:.4f}"``, and ``f"{loss}"`` prints the number, not ``tensor(...)``);
    any other tensor formats as an object (its str for an empty spec, else a TypeError)."""
    from .tensor import TensorBase  # (in the call: the Tensor imports this module for its repr)

    if type(t) is TensorBase._instance_class and t.ndim == 0:  # (the public class, not a subclass)
        return t.item().__format__(spec)
    return object.__format__(t, spec)
