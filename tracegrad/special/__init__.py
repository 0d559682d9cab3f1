"""``tg.special`` (PyTorch's ``torch.special``): the special functions under their SciPy-style
names, composed of tracegrad's primitives (so they differentiate and compile). Primitives of
their own: ``ndtri``, ``erfcx`` (ops/error_functions.py), ``i0``, ``i0e``, ``i1``, ``i1e`` and
the Bessel functions ``bessel_j0`` ... ``bessel_y1`` (ops/bessel.py), ``modified_bessel_k0``,
``modified_bessel_k1`` and their scaled forms (ops/bessel_k.py), ``zeta`` (ops/special.py), the
orthogonal polynomials (``chebyshev_polynomial_t`` ..., ``hermite_polynomial_h``/``he``,
``laguerre_polynomial_l``, ``legendre_polynomial_p``: special_polynomials.py), ``airy_ai``
(ops/airy.py).
As in PyTorch, ``bessel_*``, ``modified_bessel_*``, ``spherical_bessel_j0`` and the polynomials
have no derivative (no gradient flows), and ``zeta`` none in its first argument (asking raises).

>>> import tracegrad as tg
>>> tg.special.ndtr(tg.tensor([0.0, 1.0]))
tensor([0.5000, 0.8413])
>>> tg.special.entr(tg.tensor([0.0, 0.5]))
tensor([0.0000, 0.3466])
"""
from __future__ import annotations

import math

from ..core import dtypes as _dt
from .._api import functional as F
from .._api import arithmetic as MX
from ..nn.functional import log_softmax, softmax
from .polynomials import (chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v,
                          chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he,
                          laguerre_polynomial_l, legendre_polynomial_p, shifted_chebyshev_polynomial_t,
                          shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
                          shifted_chebyshev_polynomial_w)
from ..ops import (airy as _airy, bessel as _bessel, bessel_k as _bessel_k, error_functions as _erf,
                   special as _special)
from ..core.tensor import Tensor

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "gammainc", "gammaincc", "log_softmax", "softmax", "logsumexp", "xlogy", "xlog1py",
           "sinc", "round", "ndtr", "log_ndtr", "entr", "log1p", "expm1", "exp2", "ndtri", "erfcx", "i0", "i0e",
           "i1", "i1e", "modified_bessel_i0", "modified_bessel_i1", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "spherical_bessel_j0", "zeta", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
           "airy_ai"]

expit = F.sigmoid
logit = MX.logit
erf, erfc, erfinv = F.erf, F.erfc, MX.erfinv
gammaln, digamma, psi, polygamma, multigammaln = MX.lgamma, MX.digamma, MX.digamma, MX.polygamma, MX.mvlgamma
gammainc, gammaincc = MX.igamma, MX.igammac
logsumexp, xlogy, sinc, round = F.logsumexp, MX.xlogy, MX.sinc, F.round
log1p, expm1, exp2 = F.log1p, F.expm1, F.exp2

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input):
    """The standard normal distribution function ``P(N(0, 1) <= x)``."""
    return 0.5 * F.erfc(-input * _SQRT_HALF)


def log_ndtr(input):
    """``log ndtr(x)``, finite far into the lower tail (an asymptotic series below -20, -10 in
    float32, where ``ndtr`` itself underflows) and accurate in the upper one (``log1p(-ndtr(-x))`` above 0,
    where ``ndtr`` rounds to 1)."""
    x = input
    # (float32's erfc underflows from about 13.5: the series, with 4 terms within float32's
    # precision from 10, takes over there)
    cut = -20.0 if x.dtype is _dt.float64 else -10.0
    far, upper = x < cut, x > 0
    xs = F.where(far, x, cut)  # (each branch computed where it is valid, for finite gradients)
    z = F.where(far | upper, -1.0, x)
    inv2 = 1 / (xs * xs)
    series = F.log1p(inv2 * (-1 + inv2 * (3 + inv2 * (-15 + inv2 * 105))))
    tail = -0.5 * xs * xs - F.log(-xs) - 0.5 * math.log(2 * math.pi) + series
    above = F.log1p(-0.5 * F.erfc(F.where(upper, x, 1.0) * _SQRT_HALF))
    return F.where(far, tail, F.where(upper, above, F.log(0.5 * F.erfc(-z * _SQRT_HALF))))


def entr(input):
    """``-x log x`` elementwise (0 at 0, ``-inf`` below 0; the gradient at 0 is 0, where
    PyTorch's is +inf)."""
    safe = F.where(input > 0, input, 1.0)
    return F.where(input > 0, -safe * F.log(safe), F.where(input == 0, 0.0, float("-inf")))


def xlog1py(input, other):
    """``x * log1p(y)``, 0 where ``x`` is 0 (unless ``y`` is NaN)."""
    x = input if isinstance(input, Tensor) else F.to_tensor(float(input))
    y = other if isinstance(other, Tensor) else F.to_tensor(float(other), x.dtype)
    product = x * F.log1p(F.where(x == 0, 0.0, y))
    return F.where((x == 0) & (y == y), 0.0, product)


# ----------------------------------------------------------------------------- own primitives
def _floating(input):
    """``input`` as a tensor of a floating dtype (integers: the default one, as PyTorch's)."""
    x = input if isinstance(input, Tensor) else F.to_tensor(input)
    return x if x.dtype.is_floating_point else F.cast(x, _dt.get_default_dtype())


def ndtri(input):
    """The inverse of ``ndtr``: x with ``P(N(0, 1) <= x) = p``, accurate far into both tails
    (``ndtri(1e-300)`` keeps its digits); -inf at 0, inf at 1, NaN outside [0, 1].

    >>> import tracegrad as tg
    >>> tg.special.ndtri(tg.tensor([1e-300, 0.5], dtype=tg.float64))
    tensor([-37.0471,   0.0000], dtype=tracegrad.float64)
    """
    return _erf.NDTRI(_floating(input))


def erfcx(input):
    """The scaled complementary error function ``exp(x^2) erfc(x)``, without its overflow and
    underflow (``erfcx(x) ~ 1 / (x sqrt(pi))`` for large x; inf below about -26.6).

    >>> import tracegrad as tg
    >>> tg.special.erfcx(tg.tensor([-1.0, 100.0]))
    tensor([5.0090, 0.0056])
    """
    return _erf.ERFCX(_floating(input))


def i0(input):
    """The modified Bessel function of the first kind of order 0.

    >>> import tracegrad as tg
    >>> tg.special.i0(tg.tensor([0.0, 2.0]))
    tensor([1.0000, 2.2796])
    """
    return _bessel.I0(_floating(input))


def i0e(input):
    """``exp(-|x|) i0(x)``, finite where ``i0`` overflows."""
    return _bessel.I0E(_floating(input))


def i1(input):
    """The modified Bessel function of the first kind of order 1."""
    return _bessel.I1(_floating(input))


def i1e(input):
    """``exp(-|x|) i1(x)``, finite where ``i1`` overflows."""
    return _bessel.I1E(_floating(input))


def modified_bessel_i0(input):
    """``i0`` without a derivative (PyTorch's ``modified_bessel_i0`` has none)."""
    return i0(input).detach()


def modified_bessel_i1(input):
    """``i1`` without a derivative (PyTorch's ``modified_bessel_i1`` has none)."""
    return i1(input).detach()


def bessel_j0(input):
    """The Bessel function of the first kind of order 0 (no derivative, as PyTorch's; SciPy's
    values to ~1e-15, where PyTorch's own are off by up to ~1e-6 between 5 and 25).

    >>> import tracegrad as tg
    >>> tg.special.bessel_j0(tg.tensor([0.0, 1.0]))
    tensor([1.0000, 0.7652])
    """
    return _bessel.BESSEL_J0(_floating(input))


def bessel_j1(input):
    """The Bessel function of the first kind of order 1 (no derivative, as PyTorch's)."""
    return _bessel.BESSEL_J1(_floating(input))


def bessel_y0(input):
    """The Bessel function of the second kind of order 0 (no derivative, as PyTorch's): -inf
    at 0, NaN below."""
    return _bessel.BESSEL_Y0(_floating(input))


def bessel_y1(input):
    """The Bessel function of the second kind of order 1 (no derivative, as PyTorch's): -inf
    at 0, NaN below."""
    return _bessel.BESSEL_Y1(_floating(input))


def spherical_bessel_j0(input):
    """``sin(x) / x`` (1 at 0), without a derivative (as PyTorch's); 0 at +-inf.

    >>> import tracegrad as tg
    >>> tg.special.spherical_bessel_j0(tg.tensor([0.0, 1.0]))
    tensor([1.0000, 0.8415])
    """
    x = _floating(input).detach()
    small, infinite = F.abs(x) < 1e-4, F.abs(x) == float("inf")
    safe = F.where(small | infinite, 1.0, x)
    square = x * x  # (the series 1 - x^2/6 + x^4/120 near 0, where sin(x)/x is 0/0 at 0)
    value = F.where(small, 1 - square / 6 + square * square / 120, F.sin(safe) / safe)
    return F.where(infinite, 0.0, value)


def modified_bessel_k0(input):
    """The modified Bessel function of the second kind of order 0 (Cephes' expansions, as
    PyTorch's): inf at 0, NaN below; no derivative, as PyTorch's.

    >>> import tracegrad as tg
    >>> tg.special.modified_bessel_k0(tg.tensor([0.0, 1.0, -1.0]))
    tensor([   inf, 0.4210,    nan])
    """
    return _bessel_k.MODIFIED_BESSEL_K0(_floating(input))


def modified_bessel_k1(input):
    """The modified Bessel function of the second kind of order 1: inf at 0, NaN below; no
    derivative, as PyTorch's."""
    return _bessel_k.MODIFIED_BESSEL_K1(_floating(input))


def scaled_modified_bessel_k0(input):
    """``exp(x) modified_bessel_k0(x)``, finite where ``modified_bessel_k0`` underflows (no
    derivative, as PyTorch's).

    >>> import tracegrad as tg
    >>> tg.special.scaled_modified_bessel_k0(tg.tensor([1.0, 1000.0]))
    tensor([1.1445, 0.0396])
    """
    return _bessel_k.SCALED_MODIFIED_BESSEL_K0(_floating(input))


def scaled_modified_bessel_k1(input):
    """``exp(x) modified_bessel_k1(x)`` (no derivative, as PyTorch's)."""
    return _bessel_k.SCALED_MODIFIED_BESSEL_K1(_floating(input))


def airy_ai(input):
    """The Airy function Ai (PyTorch's algorithm, in the input's dtype): NaN at +-inf, 0 above
    103.892; no derivative, as PyTorch's.

    >>> import tracegrad as tg
    >>> tg.special.airy_ai(tg.tensor([-2.0, 0.0, 2.0]))
    tensor([0.2274, 0.3550, 0.0349])
    """
    return _airy.AIRY_AI(_floating(input))


def zeta(input, other):
    """The Hurwitz zeta function ``sum_k (k + q)^-x`` of ``x = input``, ``q = other`` (either
    may be a Python number; batches broadcast). Differentiable in ``q`` (``-x zeta(x + 1, q)``);
    PyTorch defines no derivative in ``x``: asking for one raises NotImplementedError, as there.

    >>> import tracegrad as tg
    >>> tg.special.zeta(2.0, tg.tensor([1.0, 2.0]))
    tensor([1.6449, 0.6449])
    """
    x, q = F._promoted(input, other, floating=True)
    return _special.ZETA(x, q)
