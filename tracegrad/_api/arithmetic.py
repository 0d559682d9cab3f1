"""More of PyTorch's elementwise and reduction functions, composed of ``tracegrad._api.functional``
(so they differentiate, trace and compile like any code): tolerant comparison, NaN-ignoring
reductions and extrema, ``xlogy``, ``logit``, ``sinc``, ``float_power``, ``addmm`` and kin.
Where PyTorch's derivative has a convention at a singular point (``sinc`` at 0, ``fmax`` at
ties), the composition is arranged to give the same value.

>>> import tracegrad as tg
>>> tg.isclose(tg.tensor([1.0, 2.0]), tg.tensor([1.0 + 1e-9, 2.1]))
tensor([ True, False])
>>> tg.nansum(tg.tensor([1.0, float("nan"), 2.0]))
tensor(3.)
"""
from __future__ import annotations

import math

from ..core.placement import on_inputs_device as _on_inputs_device
from .. import amp as _amp
from ..core import dtypes as _dt
from . import functional as F
from .composites import isnan
from ..core.tensor import Tensor
from .numpy_names import accept_numpy_names
from ..autograd.graph import named_backward  # (grad_fn names as PyTorch's)

__all__ = ["isclose", "equal", "count_nonzero", "logical_xor", "floor_divide", "nansum", "nanmean",
           "fmax", "fmin", "xlogy", "logit", "sinc", "heaviside", "float_power", "positive",
           "clamp_min", "clamp_max", "addmm", "dist", "addmv", "addr", "baddbmm", "addbmm", "inner", "vdot",
           "logdet", "cov", "corrcoef", "lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "igamma", "igammac", "signbit", "copysign",
           "logaddexp2", "ldexp"]


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities are close;
    NaNs are close to each other only with ``equal_nan``)."""
    a, b = F._promoted(input, other)
    error = F.abs(F.sub(a, b))
    within = F.logical_and(F.lt(error, float("inf")), F.le(error, F.add(F.mul(F.abs(b), rtol), atol)))
    close = F.logical_or(F.eq(a, b), within)  # (an infinity is close to itself only)
    if equal_nan:
        close = F.logical_or(close, F.logical_and(isnan(a), isnan(b)))
    return close


def equal(input, other):
    """True when both have the same shape and elements (a Python bool)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(F.eq(input, other).all().item())


def count_nonzero(input, dim=None):
    """The number of non-zero elements (over ``dim``), int64."""
    return F.sum(F.cast(F.ne(input, 0), _dt.int64), dim)


def logical_xor(input, other):
    return F.ne(F.ne(input, 0), F.ne(other, 0))


def floor_divide(input, other):
    """``input / other`` rounded down (PyTorch's floor_divide since 1.13)."""
    return F.div(input, other, rounding_mode="floor")


def _zero_nans(x):
    return F.where(isnan(x), 0.0, x) if x.dtype.is_floating_point else x


def nansum(input, dim=None, keepdim=False, dtype=None):
    """``sum`` with NaNs counted as zero (their gradient is zero)."""
    return F.sum(_zero_nans(input), dim, keepdim=keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, dtype=None):
    """``mean`` of the elements that are not NaN."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    kept = F.cast(F.logical_not(isnan(input)), input.dtype)
    return F.div(nansum(input, dim, keepdim, dtype), F.sum(kept, dim, keepdim=keepdim))


def fmax(input, other):
    """Elementwise maximum that ignores a NaN (NaN only where both are); ties go to ``input``
    (and so does the gradient, as PyTorch's)."""
    a, b = F._promoted(input, other)
    return F.where(F.logical_or(F.ge(a, b), isnan(b)), a, b)


def fmin(input, other):
    """Elementwise minimum that ignores a NaN (NaN only where both are)."""
    a, b = F._promoted(input, other)
    return F.where(F.logical_or(F.le(a, b), isnan(b)), a, b)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    x, y = F._promoted(input, other, floating=True)
    zero = F.logical_and(F.eq(x, 0), F.logical_not(isnan(y)))
    safe_y = F.where(zero, 1.0, y)  # (log of the masked-out entries stays finite: no NaN gradient)
    return F.where(zero, 0.0, F.mul(x, F.log(safe_y)))


def logit(input, eps=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    p = F._promoted(input, floating=True)[0]
    if eps is not None:
        p = F.clamp(p, eps, 1 - eps)
    return F.log(F.div(p, F.sub(1.0, p)))


def sinc(input):
    """``sin(pi x) / (pi x)``, 1 at 0 (with gradient 0 there, as PyTorch's)."""
    x = F._promoted(input, floating=True)[0]
    zero = F.eq(x, 0)
    safe = F.mul(F.where(zero, 1.0, x), math.pi)
    return F.where(zero, 1.0, F.div(F.sin(safe), safe))


def heaviside(input, values):
    """0 where ``input`` < 0, 1 where > 0, ``values`` where it is 0."""
    x, v = F._promoted(input, values)
    return F.where(F.eq(x, 0), v, F.cast(F.gt(x, 0), x.dtype))


def float_power(input, exponent):
    """``input ** exponent`` computed in float64."""
    base = F.cast(F.to_tensor(input), _dt.float64)
    exp = F.cast(exponent, _dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return F.pow(base, exp)


def positive(input):
    if input.dtype is _dt.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def clamp_min(input, min):
    return F.clamp(input, min=min)


def clamp_max(input, max):
    return F.clamp(input, max=max)


@_amp.lower_precision
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` ignored, NaNs too, when beta is 0)."""
    return _scaled_sum(input, F.matmul(mat1, mat2), beta, alpha)


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``."""
    from .composites import norm

    return norm(F.sub(input, other), p)


def _scaled_sum(input, product, beta, alpha):
    """``beta * input + alpha * product`` (``input`` ignored when beta is 0), as the add*
    functions combine."""
    product = product if alpha == 1 else F.mul(product, alpha)
    if beta == 0:
        return product
    return F.add(product, input if beta == 1 else F.mul(input, beta))


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(input, F.matmul(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return _scaled_sum(input, F.outer(vec1, vec2), beta, alpha)


@_amp.lower_precision
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
    return _scaled_sum(input, F.bmm(batch1, batch2), beta, alpha)


@_amp.lower_precision
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _scaled_sum(input, F.sum(F.bmm(batch1, batch2), 0), beta, alpha)


def inner(input, other):
    """Sum of products over the last dims of both (scalars multiply)."""
    if input.ndim == 0 or other.ndim == 0:
        return F.mul(input, other)
    from .contractions import tensordot

    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def vdot(input, other):
    """The dot product of two 1-d tensors (real: ``dot``)."""
    return F.dot(input, other)


def logdet(input):
    """``log(det(A))``: NaN for a negative determinant, -inf for zero (``slogdet``'s, so large
    matrices do not overflow; its gradient, ``A^-T``, is +-inf at a singular matrix).

    >>> import tracegrad as tg
    >>> tg.logdet(tg.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor(1.7918)
    """
    from ..linalg import slogdet

    sign, logabsdet = slogdet(input)
    return F.where(F.lt(sign, 0), float("nan"), logabsdet)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows (observations in columns),
    with ``correction`` subtracted from the observation count."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov: fweights and aweights are not supported")
    x = input if input.ndim == 2 else F.reshape(input, (1, -1))
    n = x.shape[1]
    centered = F.sub(x, F.mean(x, 1, keepdim=True))
    out = F.div(F.matmul(centered, F.t(centered)), max(n - correction, 0))
    return out if input.ndim == 2 else F.reshape(out, ())


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input``, clipped to [-1, 1]."""
    c = cov(input)
    if input.ndim < 2:
        return F.div(c, c)
    from .composites import diagonal

    std = F.sqrt(diagonal(c))
    out = F.div(F.div(c, F.unsqueeze(std, 1)), F.unsqueeze(std, 0))
    return F.clamp(out, -1.0, 1.0)


# ----------------------------------------------------------------------------- gamma family
def lgamma(input):
    """``log |Gamma(x)|``; its derivative is ``digamma`` (ops/special.py)."""
    from ..ops.special import LGAMMA

    return LGAMMA(input)


def digamma(input):
    """``d/dx log Gamma(x)``; ``-inf`` at 0, NaN at negative integers, as PyTorch's."""
    from ..ops.special import DIGAMMA

    return DIGAMMA(input)


def polygamma(n, input):
    """The ``n``-th derivative of ``digamma`` (``n = 0``: digamma itself)."""
    from ..ops.special import POLYGAMMA

    return digamma(input) if n == 0 else POLYGAMMA(input, n=int(n))


def erfinv(input):
    """The inverse of ``erf`` on [-1, 1] (+-inf at +-1, NaN outside)."""
    from ..ops.error_functions import ERFINV

    return ERFINV(input)


def igamma(input, other):
    """The regularized lower incomplete gamma function ``P(a, x)`` of ``a = input`` and
    ``x = other`` (the Gamma(a, 1) distribution function at x). Differentiable in ``x`` only:
    as in PyTorch, a backward that needs the gradient in ``a`` raises NotImplementedError."""
    from ..ops.special import IGAMMA

    return IGAMMA(*F._promoted(input, other))


def igammac(input, other):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``."""
    from ..ops.special import IGAMMAC

    return IGAMMAC(*F._promoted(input, other))


@_on_inputs_device
def mvlgamma(input, p):
    """The multivariate log-gamma of dimension ``p``: ``p (p - 1) / 4 log(pi) + sum over j < p
    of lgamma(x - j / 2)``; every element must exceed ``(p - 1) / 2``."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    if not input._is_traced and not bool((input > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    shifts = F.to_tensor([-j / 2 for j in range(p)], input.dtype)
    return F.sum(lgamma(F.unsqueeze(input, -1) + shifts), -1) + p * (p - 1) / 4 * math.log(math.pi)


# ----------------------------------------------------------------------------- signs and scales
def signbit(input):
    """True where the sign bit is set (negative numbers, -0.0)."""
    if not input.dtype.is_floating_point:
        return input < 0
    return (input < 0) | ((input == 0) & (F.div(1.0, input) < 0))


@named_backward("CopysignBackward0")
def copysign(input, other):
    """``|input|`` with ``other``'s sign (-0.0 counts as negative)."""
    dtype = _dt.result_type(input, other)
    dtype = dtype if dtype.is_floating_point else _dt.get_default_dtype()  # (ints: as PyTorch's)
    x = F.cast(F.to_tensor(input), dtype)
    negative = signbit(other if isinstance(other, Tensor) else F.to_tensor(float(other), dtype))
    out = F.where(negative, -F.abs(x), F.abs(x))
    if isinstance(other, Tensor) and other.requires_grad:
        # PyTorch's gradient for ``other`` is zeros, not None: select it nowhere (a mask of
        # False), which keeps the value exact even for infinite ``other``.
        nowhere = F.logical_and(negative, F.logical_not(negative))
        out = F.where(nowhere, F.cast(other, dtype), out)
    return out


def logaddexp2(input, other):
    """``log2(2^input + 2^other)`` without overflow."""
    hi, lo = F.maximum(input, other), F.minimum(input, other)
    same_inf = (hi == lo) & (F.abs(hi) == float("inf"))
    return F.where(same_inf, hi, hi + F.log1p(F.exp2(lo - hi)) / math.log(2))


def ldexp(input, other):
    """``input * 2 ** other`` (in floating point also for integer exponents: PyTorch's gives 0
    for a negative integer tensor exponent)."""
    other = other if isinstance(other, Tensor) else F.to_tensor(other)
    if not other.dtype.is_floating_point:
        other = F.cast(other, input.dtype if input.dtype.is_floating_point else _dt.get_default_dtype())
    return F.mul(input, F.exp2(other))


# (last: every function above with a dim= takes axis= too, as PyTorch's)
accept_numpy_names(globals())
