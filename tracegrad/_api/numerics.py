"""Numerical routines of the ``torch`` namespace built from primitives (so they differentiate,
trace and compile with no rules of their own): pairwise distances (``cdist``), integration
(``trapezoid``, ``cumulative_trapezoid``), finite differences (``gradient``), ``renorm``,
``frexp``, ``chain_matmul``, ``hardshrink`` and ``angle``; and, eager only (a compiled function
breaks its graph there, with a warning), ``gcd``, ``lcm``, ``nextafter`` and ``histogram``.

>>> import tracegrad as tg
>>> tg.cdist(tg.tensor([[0.0, 0.0]]), tg.tensor([[3.0, 4.0], [1.0, 0.0]]))
tensor([[5., 1.]])
>>> tg.trapezoid(tg.tensor([1.0, 2.0, 3.0]))
tensor(4.)
"""
from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from ..core.placement import on_host as _on_host
from .. import amp as _amp
from ..core import dtypes as _dt
from . import functional as F
from ..ops import bitwise as _bitwise
from ..ops import elementwise as _elementwise
from ..core.creation import full_like, ones_like, zeros_like
from ..core.tensor import Tensor
from ..ops.shapes import wrap_dim

_histogram_result = namedtuple("histogram", ["hist", "bin_edges"])
_frexp_result = namedtuple("frexp", ["mantissa", "exponent"])

__all__ = ["cdist", "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "renorm", "frexp",
           "chain_matmul", "hardshrink", "angle", "gcd", "lcm", "nextafter", "histogram"]


@_amp.float32
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of ``x1`` (…, P, M) and each row of ``x2``
    (…, R, M): a (…, P, R) tensor. For p = 2 the ``use_mm`` modes compute it, as PyTorch, as
    ``sqrt(max(|a|² + |b|² - 2 a·b, 0))`` (a product; less exact for near points); the gradient
    at a zero distance is 0."""
    from ..linalg import vector_norm

    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if not x1.dtype.is_floating_point or not x2.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype}, X2 got: {x2.dtype}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    P, R = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                         or (compute_mode == modes[0] and (P > 25 or R > 25)))
    if use_mm:
        sq = (x1 * x1).sum(-1, keepdim=True) + (x2 * x2).sum(-1).unsqueeze(-2) - 2 * (x1 @ x2.mT)
        d2 = sq.clamp(min=0.0)
        positive = d2 > 0
        # sqrt's gradient at 0 is infinite; PyTorch's is 0 there
        return F.where(positive, F.where(positive, d2, ones_like(d2)).sqrt(), zeros_like(d2))
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, ord=p, dim=-1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """∫ y along ``dim`` by the trapezoid rule, at sample points ``x`` (a tensor, 1-D or like
    ``y``) or spacing ``dx`` (default 1)."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: both x and dx")
    d = dim % y.ndim if y.ndim else 0
    n = y.shape[d] if y.ndim else 0
    if n == 0:
        return zeros_like(y.sum(d)) if y.ndim else zeros_like(y)
    return _doubled_areas(y, x, dx, d).sum(d) / 2


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one element fewer)."""
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: both x and dx")
    d = dim % y.ndim
    n = y.shape[d]
    if n == 0:
        return y.narrow(d, 0, 0)
    return (_doubled_areas(y, x, dx, d) / 2).cumsum(d)


def _doubled_areas(y, x, dx, d):
    """Twice each trapezoid's area along dim ``d``: ``(x[i+1] - x[i]) * (y[i+1] + y[i])``."""
    n = y.shape[d]
    return _spacing(x, dx, y, d) * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))


def _spacing(x, dx, y, d):
    """The steps between samples, shaped to multiply the pairs of ``y`` along dim ``d``."""
    if x is None:
        return 1.0 if dx is None else dx
    if not isinstance(x, Tensor):
        raise TypeError(f"trapezoid: x must be a Tensor, got {type(x).__name__}")
    n = x.shape[-1] if x.ndim == 1 else x.shape[d]
    if x.ndim == 1:
        if n != y.shape[d]:
            raise RuntimeError(f"trapezoid: There must be one `x` value for each sample point: x has "
                               f"{n}, y has {y.shape[d]} along dim {d}")
        steps = x[1:] - x[:-1]
        return steps.reshape(*steps.shape, *([1] * (y.ndim - d - 1)))
    return x.narrow(d, 1, n - 1) - x.narrow(d, 0, n - 1)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Derivatives of ``input`` estimated by central differences inside and one-sided ones at
    the edges (first or second order, ``edge_order``), along each dim of ``dim`` (default all):
    a tuple with one tensor per dim. ``spacing`` is a number, one number per dim, or one 1-D
    tensor of coordinates per dim."""
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(d % input.ndim for d in dims)
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    spacings = _spacings(spacing, len(dims))
    out = []
    for d, h in zip(dims, spacings):
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least "
                               f"edge_order+1, got {n} along dim {d}")
        out.append(_gradient_along(input, d, h, edge_order) if isinstance(h, Tensor)
                   else _gradient_uniform(input, d, float(h), edge_order))
    return tuple(out)


def _spacings(spacing, count):
    if isinstance(spacing, (numbers.Number, Tensor)) and not (isinstance(spacing, Tensor) and spacing.ndim == 1):
        value = spacing.item() if isinstance(spacing, Tensor) else spacing
        return [value] * count
    spacing = list(spacing)
    if len(spacing) == 1 and count > 1 and not isinstance(spacing[0], Tensor):
        return spacing * count
    if len(spacing) != count:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                           f"dim arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {count}.")
    return spacing


def _gradient_uniform(y, d, h, edge_order):
    n = y.shape[d]
    at = lambda start, length: y.narrow(d, start, length)
    inner = (at(2, n - 2) - at(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (at(1, 1) - at(0, 1)) / h
        last = (at(n - 1, 1) - at(n - 2, 1)) / h
    else:
        first = (-1.5 * at(0, 1) + 2 * at(1, 1) - 0.5 * at(2, 1)) / h
        last = (0.5 * at(n - 3, 1) - 2 * at(n - 2, 1) + 1.5 * at(n - 1, 1)) / h
    return F.cat([first, inner, last], d)


def _gradient_along(y, d, x, edge_order):
    """Non-uniform coordinates ``x`` (1-D): the second-order interior formula of NumPy's
    ``gradient`` (exact for quadratics), one- or second-order edges."""
    n = y.shape[d]
    if x.ndim != 1 or x.shape[0] != n:
        raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and of length "
                           f"{n} (the size of dim {d}), got shape {tuple(x.shape)}")
    shape = [1] * y.ndim
    shape[d] = -1
    at = lambda start, length: y.narrow(d, start, length)
    hx = x[1:] - x[:-1]
    h0, h1 = hx[:-1].reshape(shape), hx[1:].reshape(shape)
    inner = (h0 * h0 * at(2, n - 2) - h1 * h1 * at(0, n - 2) + (h1 * h1 - h0 * h0) * at(1, n - 2)) \
        / (h0 * h1 * (h0 + h1))
    if edge_order == 1:
        first = (at(1, 1) - at(0, 1)) / hx[0]
        last = (at(n - 1, 1) - at(n - 2, 1)) / hx[-1]
    else:
        a, b = hx[0], hx[1]
        first = (-(2 * a + b) / (a * (a + b)) * at(0, 1) + (a + b) / (a * b) * at(1, 1)
                 - a / (b * (a + b)) * at(2, 1))
        a, b = hx[-2], hx[-1]
        last = (b / (a * (a + b)) * at(n - 3, 1) - (a + b) / (a * b) * at(n - 2, 1)
                + (a + 2 * b) / (b * (a + b)) * at(n - 1, 1))
    return F.cat([first, inner, last], d)


def renorm(input, p, dim, maxnorm):
    """Each sub-tensor along ``dim`` (each slice ``input.select(dim, i)``) scaled down to p-norm
    ``maxnorm`` where its norm is larger (PyTorch's factor ``maxnorm / (norm + 1e-7)``)."""
    from ..linalg import vector_norm

    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:  # (PyTorch's check, before the dim's)
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = wrap_dim(dim, input.ndim)
    others = tuple(k for k in range(input.ndim) if k != d)
    norm = vector_norm(input, ord=p, dim=others, keepdim=True)
    factor = F.where(norm > maxnorm, maxnorm / (norm + 1e-7), ones_like(norm))
    return input * factor


@_on_host
def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent`` and |mantissa| in
    [0.5, 1) (int32 exponents, as PyTorch); not differentiable."""
    from ..core.creation import tensor
    from ..core import tracing as trace

    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    trace.graph_break("frexp reads the bits of the values (no traced form)")
    mantissa, exponent = np.frexp(input.detach().numpy())
    return _frexp_result(tensor(mantissa, dtype=input.dtype), tensor(exponent.astype(np.int32), dtype=_dt.int32))


def chain_matmul(*matrices, out=None):
    """The product of 2-D matrices (deprecated in PyTorch for ``linalg.multi_dot``)."""
    from ..linalg import multi_dot

    if len(matrices) == 1:
        if matrices[0].ndim != 2:
            raise RuntimeError(f"chain_matmul(): Tensor 0 must be 2D, got {matrices[0].ndim}D")
        return F.write_out(matrices[0].clone(), out)
    return F.write_out(multi_dot(list(matrices)), out)


def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0 (as ``torch.nn.functional.hardshrink``)."""
    from ..nn.functional import hardshrink as _hardshrink

    return _hardshrink(input, lambd)


def angle(input):
    """The argument of each (real) value: 0 for x >= 0, pi for x < 0, NaN for NaN; its
    gradient is 0, as PyTorch's for real inputs."""
    import math

    from .composites import isfinite, isnan

    x = input if input.dtype.is_floating_point else input.to(_dt.get_default_dtype())
    value = F.where(isnan(x), x, F.where(x < 0, full_like(x, math.pi), zeros_like(x))).detach()
    if not x.requires_grad:
        return value
    return value + F.where(isfinite(x), x, zeros_like(x)) * 0  # connected to x, with gradient 0


def _integer_op(op):
    def fn(input, other):
        return op(*F._promoted(input, other))
    fn.__name__ = op.name
    fn.__doc__ = f"Elementwise ``{op.name}`` of integer tensors (ops/bitwise.py); not differentiable."
    return fn


gcd, lcm = _integer_op(_bitwise.GCD), _integer_op(_bitwise.LCM)


def nextafter(input, other):
    """The next float after ``input`` towards ``other``, elementwise; not differentiable."""
    return _elementwise.NEXTAFTER(*F._promoted(input, other))


@_on_host
def histogram(input, bins, *, range=None, weight=None, density=False):
    """``(hist, bin_edges)`` of the values of ``input``: ``bins`` equal bins over ``range``
    (default: the values' min and max) or the given edges (a 1-D tensor); ``weight`` weighs
    each value; ``density`` normalises to a density."""
    from ..core.creation import tensor
    from ..core import tracing as trace

    trace.graph_break("histogram counts the values (data-dependent)")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the same dtype, "
                           f"and a floating dtype; got {input.dtype}")
    edges = bins.detach().numpy() if isinstance(bins, Tensor) else int(bins)
    w = None if weight is None else weight.detach().numpy().reshape(-1)
    hist, edges = np.histogram(input.detach().numpy().reshape(-1), edges, range=range, weights=w,
                               density=density)
    return _histogram_result(tensor(hist.astype(input.dtype.np), dtype=input.dtype),
                             tensor(edges.astype(input.dtype.np), dtype=input.dtype))
