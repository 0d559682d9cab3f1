"""Special-function primitives: the gamma family ``lgamma``, ``digamma`` and ``polygamma``
(attr ``n`` >= 1), each the derivative of the one before (``polygamma(n)``'s is
``polygamma(n + 1)``), so every order of derivative has a rule. (The error function's
relatives: ops/error_functions.py; Bessel functions: ops/bessel.py.)

``lgamma`` is the C library's, eagerly and compiled. ``digamma`` and ``polygamma`` have no C
library function: both backends run the same algorithm (``tg_digamma``/``tg_polygamma`` in
compiler/backends/c/templates/runtime.h.j2 mirror the NumPy code here), in double: shift the argument up
by the recurrence ``psi(x) = psi(x + 1) - 1/x`` (``psi_n(x) = psi_n(x + 1) - (-1)^n n! /
x^(n+1)``) until it is large, then the asymptotic series with Bernoulli numbers; ``digamma``
reflects negative arguments (``psi(x) = psi(1 - x) - pi / tan(pi x)``). As PyTorch's:
``digamma(0)`` is ``-inf`` (``+inf`` at ``-0``), negative integers give NaN; ``polygamma`` at
its poles (0 and the negative integers) gives its limit from the right, ``+inf`` or ``-inf``.
``polygamma(1, x)`` is accurate to a few ulp where PyTorch's trigamma is to about 1e-10.

>>> import tracegrad as tg
>>> tg.digamma(tg.tensor([1.0, 0.5]))
tensor([-0.5772, -1.9635])
>>> tg.lgamma(tg.tensor([4.0]))
tensor([1.7918])
"""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes as _dt
from .elementwise import _infer_binary, _quiet, binary, on_floats, unary
from .registry import defop, raise_no_derivative

# B_2k / (2k) for k = 1..7: the series psi(x) ~ ln x - 1/(2x) - sum B_2k / (2k x^2k)
_DIGAMMA_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)  # B_2 .. B_14
_SHIFT = 10.0  # (the series is used from here on: its error is below 1e-16 relative)


def _lgamma1(v):
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # (poles 0, -1, ... and huge arguments: C gives +inf)
        return math.inf


def _lgamma(x):
    return np.vectorize(_lgamma1, otypes=[np.float64])(x.astype(np.float64)).astype(x.dtype, copy=False)


def _digamma64(x):
    x = np.array(x, dtype=np.float64)
    out = np.zeros_like(x)
    reflect = x < 0
    if reflect.any():  # psi(x) = psi(1 - x) - pi / tan(pi x)
        out[reflect] = -np.pi / np.tan(np.pi * x[reflect])
        x = np.where(reflect, 1 - x, x)
    for _ in range(int(_SHIFT)):
        small = x < _SHIFT
        out = np.where(small, out - 1 / x, out)
        x = np.where(small, x + 1, x)
    inv2 = 1 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_DIGAMMA_SERIES):
        series = (series + c) * inv2
    return out + np.log(x) - 0.5 / x - series


def _digamma(x):
    x64 = np.asarray(x, dtype=np.float64)
    out = _digamma64(x64)
    out = np.where(x64 == 0, np.copysign(np.inf, -x64), out)
    out = np.where((x64 < 0) & (x64 == np.floor(x64)), np.nan, out)
    return out.astype(x.dtype, copy=False)


def _polygamma64(n, x):
    x = np.array(x, dtype=np.float64)
    sign = 1.0 if n % 2 else -1.0  # (-1)^(n+1)
    factorial = math.factorial(n)
    out = np.zeros_like(x)
    for _ in range(int(2 * _SHIFT)):
        small = x < 2 * _SHIFT
        out = np.where(small, out + sign * factorial / x ** (n + 1), out)
        x = np.where(small, x + 1, x)
    # (-1)^(n+1) [(n-1)!/x^n + n!/(2 x^(n+1)) + sum B_2k (2k+n-1)! / ((2k)! x^(2k+n))]
    tail = math.factorial(n - 1) / x ** n + factorial / (2 * x ** (n + 1))
    for k, b in enumerate(_BERNOULLI, start=1):
        tail = tail + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / x ** (2 * k + n)
    return out + sign * tail


def _polygamma(x, n):
    x64 = np.asarray(x, dtype=np.float64)
    out = _polygamma64(n, x64)
    pole = (x64 <= 0) & (x64 == np.floor(x64))  # (the limit from the right, PyTorch's at 0)
    out = np.where(pole, np.inf if n % 2 else -np.inf, out)
    return out.astype(x.dtype, copy=False)


LGAMMA = unary("lgamma", _lgamma, vjp=lambda ctx, g: (g * DIGAMMA(ctx.input(0)),),
               jvp=lambda ctx, t: t * DIGAMMA(ctx.input(0)), c="lgamma({0})")
DIGAMMA = unary("digamma", _digamma, vjp=lambda ctx, g: (g * POLYGAMMA(ctx.input(0), n=1),),
                jvp=lambda ctx, t: t * POLYGAMMA(ctx.input(0), n=1), c="tg_digamma({0})")


def _infer_polygamma(x, n):
    if not isinstance(n, int) or n < 1:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n = {n}"
                           if isinstance(n, int) else f"polygamma: n must be an int, got {n!r}")
    return tuple(x.shape), x.dtype if x.dtype.is_floating_point else _float()


def _float():
    return _dt.get_default_dtype()


POLYGAMMA = defop(
    "polygamma", infer=_infer_polygamma, impl=_quiet(on_floats(_polygamma)), save=(0,), kind="elementwise",
    vjp=lambda ctx, g: (g * POLYGAMMA(ctx.input(0), n=ctx.n + 1),),
    jvp=lambda ctx, t: t * POLYGAMMA(ctx.input(0), n=ctx.n + 1),
    c="tg_polygamma({n}, {0})",
    sample=lambda: [(("positive",), {"n": 1}), (("positive",), {"n": 2}), (("above_one",), {"n": 3})])


# ----------------------------------------------------------------------------- zeta
# The Hurwitz zeta function sum_k (k + q)^-x by Euler-Maclaurin: the first terms, at least 9 and
# up to q + k >= 10 (as Cephes, PyTorch's: its corrections then fall fast enough for large x
# too), then the integral of the rest and its Bernoulli corrections (B_2..B_24). As PyTorch's: x = 1 gives inf,
# x < 1 NaN; q a pole (0, -1, ...) inf; q < 0 with x not an integer NaN; q = +-inf NaN.
# Derivative in q only (PyTorch defines none in x: its rules raise there).
_ZETA_SHIFT, _ZETA_TERMS = 10.0, 9
_BERNOULLI_2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
                 -174611 / 330, 854513 / 138, -236364091 / 2730)
_ZETA_TAIL = tuple(b / math.factorial(2 * (k + 1)) for k, b in enumerate(_BERNOULLI_2K))


def _zeta64(x, q):
    x, q = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(q, np.float64))
    out, w = np.zeros(x.shape), q.copy()
    shifts = np.where(np.isfinite(q), np.maximum(np.ceil(_ZETA_SHIFT - q), _ZETA_TERMS), 0)
    for k in range(int(shifts.max()) if shifts.size else 0):
        more = (k < _ZETA_TERMS) | (w < _ZETA_SHIFT)
        out = np.where(more, out + w ** -x, out)
        w = np.where(more, w + 1, w)
    tail = w ** (1 - x) / (x - 1) + 0.5 * w ** -x
    factor = x * w ** (-x - 1)  # x (x+1) ... (x+2j-2) w^(-x-2j+1)
    for j, c in enumerate(_ZETA_TAIL):
        tail = tail + c * factor
        factor = factor * (x + 2 * j + 1) * (x + 2 * j + 2) / (w * w)
    out = out + tail
    pole = (q <= 0) & (q == np.floor(q))
    out = np.where(x == 1, np.inf, np.where(pole, np.inf, out))
    undefined = (x < 1) | np.isinf(q) | ((q < 0) & (x != np.floor(x)) & ~pole)
    return np.where(undefined, np.nan, out)


def _zeta(x, q):
    return _zeta64(x, q).astype(x.dtype, copy=False)


def _zeta_vjp(ctx, g):  # (none in x: OpNode.apply raises first when a backward needs it)
    x, q = ctx.input(0), ctx.input(1)
    return None, g * -x * ZETA(x + 1, q)


def _zeta_jvp(ctx, tx, tq):
    raise_no_derivative("zeta", tx is not None)
    x, q = ctx.input(0), ctx.input(1)
    return tq * -x * ZETA(x + 1, q)


ZETA = binary("zeta", _zeta, vjp=_zeta_vjp, jvp=_zeta_jvp, c="tg_zeta({0}, {1})", no_derivative=(0,),
              no_derivative_label="zeta",
              sample=lambda: [(("above_one", "positive"), {}), ((("above_one", (3, 1)), ("positive", (4,))), {})])


# ----------------------------------------------------------------------------- igamma, igammac
# The regularized incomplete gamma functions P(a, x) (igamma) and Q(a, x) = 1 - P (igammac), in
# double, by Cephes' (and SciPy's, PyTorch's) methods without their uniform asymptotic
# expansion for large a near x: the power series of P (DLMF 8.11.4), the continued fraction of
# Q (DLMF 8.9.2), and for small x the series of Q that avoids 1 - P's cancellation (DLMF 8.7.3),
# each picked where PyTorch picks it. The prefactor x^a e^-x / Gamma(a) comes from logs, so for
# a in the thousands the relative error grows to about a * 1e-16. The C backend runs the same
# steps (tg_igamma in compiler/backends/c/templates/runtime_gamma.h.j2).
_MACHEP = 1.11022302462515654042e-16
_MAXITER = 2000
_BIG, _BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16


def _igam_prefactor(a, x):
    return np.exp(a * np.log(x) - x - _lgamma(a))


def _igam_series(a, x):
    """P(a, x) by its power series; each element stops at its own convergence (as the C loop)."""
    r, c, total = a.copy(), np.ones_like(a), np.ones_like(a)
    active = np.ones(a.shape, bool)
    for _ in range(_MAXITER):
        if not active.any():
            break
        r = np.where(active, r + 1, r)
        c = np.where(active, c * x / r, c)
        total = np.where(active, total + c, total)
        active &= ~(c <= _MACHEP * total)
    return total * _igam_prefactor(a, x) / a


def _igamc_series(a, x):
    """Q(a, x) for small x: 1 - x^a / Gamma(a + 1) + x^a / Gamma(a) sum (-x)^n / (n! (a + n))."""
    fac, total = np.ones_like(a), np.zeros_like(a)
    active = np.ones(a.shape, bool)
    for n in range(1, _MAXITER):
        if not active.any():
            break
        fac = np.where(active, fac * -x / n, fac)
        term = fac / (a + n)
        total = np.where(active, total + term, total)
        active &= ~(np.abs(term) <= _MACHEP * np.abs(total))
    logx = np.log(x)
    return -np.expm1(a * logx - _lgamma(1 + a)) - np.exp(a * logx - _lgamma(a)) * total


def _igamc_fraction(a, x):
    """Q(a, x) by its continued fraction (Cephes' igamc recurrence, rescaled when it grows)."""
    y, z, c = 1 - a, x + 2 - a, np.zeros_like(a)
    pkm2, qkm2, pkm1, qkm1 = np.ones_like(a), x.copy(), x + 1, (x + 2 - a) * x
    ans = pkm1 / qkm1
    active = np.ones(a.shape, bool)
    for _ in range(_MAXITER):
        if not active.any():
            break
        c, y, z = c + 1, y + 1, z + 2
        yc = y * c
        pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
        r = np.where(qk != 0, pk / np.where(qk != 0, qk, 1), ans)
        t = np.where(qk != 0, np.abs((ans - r) / r), 1.0)
        ans = np.where(active, r, ans)
        big = np.abs(pk) > _BIG
        scale = np.where(big & active, _BIGINV, 1.0)
        pkm2, pkm1 = np.where(active, pkm1, pkm2) * scale, np.where(active, pk, pkm1) * scale
        qkm2, qkm1 = np.where(active, qkm1, qkm2) * scale, np.where(active, qk, qkm1) * scale
        active &= ~(t <= _MACHEP)
    return ans * _igam_prefactor(a, x)


def _igamma_edges(a, x, upper):
    """PyTorch's values where a or x is 0, infinite or negative (NaN where it is undefined);
    NaN marks the elements the series and fractions compute."""
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)  # (the values at x = 0 and at x = inf)
    out = np.full(np.broadcast(a, x).shape, np.nan)
    out = np.where(np.isinf(x) & np.isfinite(a), hi, out)
    out = np.where(np.isinf(a) & np.isfinite(x), lo, out)
    out = np.where(x == 0, lo, out)
    out = np.where((a == 0) & (x > 0), hi, out)
    undefined = (x < 0) | (a < 0) | ((a == 0) & (x == 0)) | (np.isinf(a) & np.isinf(x))
    regular = ~undefined & (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    return np.where(undefined, np.nan, out), regular


def _igamma_impl(upper):
    def impl(a, x):
        a64, x64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        out, regular = _igamma_edges(a64, x64, upper)
        a_, x_ = a64[regular], x64[regular]
        # P from its series where x <= max(1, a), else 1 - Q; Q from the fraction where
        # x > 1.1 and x >= a, from its own series where x and a are small, else 1 - P
        fraction = (x_ > 1.1) & (x_ >= a_) if upper else (x_ > 1) & (x_ > a_)
        small = (~fraction & (((x_ <= 0.5) & (-0.4 / np.log(x_) >= a_)) | ((x_ > 0.5) & (x_ <= 1.1) & (x_ * 1.1 >= a_)))
                 if upper else np.zeros_like(fraction))
        series = ~fraction & ~small
        res = np.empty_like(a_)
        q = _igamc_fraction(a_[fraction], x_[fraction])
        res[fraction] = q if upper else 1 - q
        p = _igam_series(a_[series], x_[series])
        res[series] = 1 - p if upper else p
        res[small] = _igamc_series(a_[small], x_[small])
        out[regular] = res
        return out.astype(np.result_type(a, x), copy=False)

    impl.__name__ = "igammac" if upper else "igamma"
    return impl


def _infer_igamma(a, x):
    if not a.dtype.is_floating_point or not x.dtype.is_floating_point:
        raise NotImplementedError(f'"igamma" not implemented for {a.dtype} and {x.dtype}: '
                                  "expected floating point tensors")
    return _infer_binary(a, x)


def _igamma_rules(name, sign):
    """VJP and JVP of P (sign 1) or Q (sign -1): only in x, ``dP/dx = x^(a-1) e^-x / Gamma(a)``
    (PyTorch's formula, from logs); PyTorch has no derivative in a (``no_derivative``)."""
    def density(ctx):
        a, x = ctx.input(0), ctx.input(1)
        return sign * ((a - 1) * x.log() - x - LGAMMA(a)).exp()

    def jvp(ctx, ta, tx):
        if ta is not None:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        return None if tx is None else tx * density(ctx)

    return dict(vjp=lambda ctx, g: (None, g * density(ctx)), jvp=jvp)


def _igamma_samples():
    return [(("positive", "positive"), {}), ((("above_one", (3, 1)), ("positive", (4,))), {}),
            (("positive", "above_one"), {})]


IGAMMA = defop("igamma", infer=_infer_igamma, impl=_quiet(_igamma_impl(False)), save=(0, 1),
               kind="elementwise", no_derivative=(0,), c="tg_igamma({0}, {1})",
               sample=_igamma_samples, **_igamma_rules("igamma", 1))
IGAMMAC = defop("igammac", infer=_infer_igamma, impl=_quiet(_igamma_impl(True)), save=(0, 1),
                kind="elementwise", no_derivative=(0,), c="tg_igammac({0}, {1})",
                sample=_igamma_samples, **_igamma_rules("igammac", -1))
