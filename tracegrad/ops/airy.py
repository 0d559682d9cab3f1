"""``airy_ai``: the Airy function Ai, by PyTorch's algorithm (Cephes' airy, aten's Math.h):
below -2.09 the asymptotic form ``sin(t) (1 + z^2 F(z^2)) - cos(t) z G(z^2)`` over ``sqrt(pi)
|x|^(1/4)`` with ``t = zeta + pi/4``, ``z = 1/zeta``, ``zeta = 2/3 |x|^(3/2)`` (rational
F, G); from 2.09 on ``e^-zeta A(1/zeta) / (2 sqrt(pi) x^(1/4))``; between, the Maclaurin
series ``c1 f(x^3) - c2 x g(x^3)`` summed until its terms are below the dtype's epsilon. NaN at
+-inf, 0 above 103.892. Computed in the input's dtype as PyTorch's (float32: float arithmetic,
sqrt, exp, sin and cos correctly rounded; the C twins ``tg_airy_ai_{f,d}`` in
compiler/backends/c/templates/special_airy.h.j2). No derivative, as PyTorch's (no gradient flows).

>>> import tracegrad as tg
>>> tg.special.airy_ai(tg.tensor([-1.0, 0.0, 1.0]))
tensor([0.5356, 0.3550, 0.1353])
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise import _infer_unary_float, _quiet, on_floats
from .registry import defop

_AN = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
       1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
       1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AD = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
       1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
       1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AFN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
        -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
        -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AFD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
        9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
        4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AGN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
        9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
        5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
        8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AGD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
        5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
        4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
        4.91834570062930015649e-09)
_INV_SQRT_PI = 5.64189583547756286948e-01
_C1, _C2 = 0.355028053887817239260, 0.258819403792806798405


def _rounded(fn):
    """``fn`` in double, rounded to the operand's dtype (C's float functions, nearly always)."""
    return lambda v: fn(np.asarray(v, np.float64)).astype(v.dtype)


_SQRT, _EXP, _SIN, _COS = (_rounded(f) for f in (np.sqrt, np.exp, np.sin, np.cos))


def _horner(v, coefficients, dtype):
    total = np.zeros_like(v)
    for c in coefficients:
        total = total * v + dtype(c)
    return total


def _airy_ai(x):
    dtype = np.float64 if np.result_type(x) == np.float64 else np.float32  # (PyTorch's T)
    x = np.asarray(x, dtype)
    one, two, three = dtype(1), dtype(2), dtype(3)
    negative, positive = x < dtype(-2.09), x >= dtype(2.09)
    # below -2.09: the oscillating asymptotic form
    xn = np.where(negative, x, dtype(-3))
    root = _SQRT(-xn)
    z = one / (dtype(-2) * xn * root / three)
    zz = z * z
    afn, afd = _horner(zz, _AFN, dtype), _horner(zz, _AFD, dtype)
    agn, agd = _horner(zz, _AGN, dtype), _horner(zz, _AGD, dtype)
    t = dtype(-2) * xn * root / three + dtype(0.25) * dtype(math.pi)
    oscillating = dtype(_INV_SQRT_PI) / _SQRT(root) * (_SIN(t) * (one + zz * afn / afd) - _COS(t) * (z * agn / agd))
    # from 2.09 on: the decaying asymptotic form
    xp = np.where(positive, x, dtype(3))
    zeta = two * xp * _SQRT(xp) / three
    an, ad = _horner(one / zeta, _AN, dtype), _horner(one / zeta, _AD, dtype)
    decaying = dtype(_INV_SQRT_PI) * (an / ad) / (two * _SQRT(_SQRT(xp)) * _EXP(zeta))
    # between: the Maclaurin series, each element until its term is below the dtype's epsilon
    xs = np.where(negative | positive | np.isnan(x), dtype(0), x)
    f, g, k, m, n = np.ones_like(xs), xs.copy(), np.ones_like(xs), np.ones_like(xs), xs.copy()
    cube = xs * xs * xs
    active = np.ones(xs.shape, bool)
    eps = np.finfo(dtype).eps
    while active.any():
        m1 = m * cube / (k + one)
        n1 = n * cube / (k + two)
        m1 = m1 / (k + two)
        f1 = f + m1
        n1 = n1 / (k + three)
        f, g, m, n = (np.where(active, new, old) for new, old in ((f1, f), (g + n1, g), (m1, m), (n1, n)))
        k = np.where(active, k + three, k)
        active = active & (np.abs(m / f) > eps)
    series = dtype(_C1) * f - dtype(_C2) * g
    value = np.where(negative, oscillating, np.where(positive, decaying, series))
    value = np.where(x > dtype(103.892), dtype(0), value)
    return np.where(np.isinf(x) | np.isnan(x), dtype(np.nan), value)


AIRY_AI = defop("airy_ai", infer=_infer_unary_float, impl=_quiet(on_floats(lambda x: _airy_ai(x).astype(x.dtype, copy=False))),
                kind="elementwise", differentiable=False,
                c="(sizeof({0}) == sizeof(double) ? tg_airy_ai_d({0}) : tg_airy_ai_f({0}))",
                sample=lambda: [(("any",), {})])
