"""``tg.special``'s orthogonal polynomials, as PyTorch's: ``input`` and the degree ``n`` (a
tensor or a number; whole numbers, fractions truncate) broadcast and promote to one floating
dtype. PyTorch's algorithm and its edge values (ops/orthogonal_polynomials.py): 0 for a
negative (or NaN, infinite) degree, its special values at +-1 (shifted: at 0 and 1), closed forms
inside (-1, 1) for larger degrees, NaN once the recurrence overflows, and for Hermite degrees
above 128 (float32) or 512 (float64). No derivative, as PyTorch's (no gradient flows).

>>> import tracegrad as tg
>>> tg.special.legendre_polynomial_p(tg.tensor([0.5, 1.0, -1.0]), 3)
tensor([-0.4375,  1.0000, -1.0000])
>>> tg.special.hermite_polynomial_h(2.0, tg.tensor([0, 1, 2, 3]))
tensor([ 1.,  4., 14., 40.])
"""
from __future__ import annotations

from .._api import functional as F
from ..ops.orthogonal_polynomials import OPS


def _apply(name, input, n):
    x, degree = F._promoted(input, n, floating=True)  # (integers: the default float dtype)
    return OPS[name](x, degree)


def chebyshev_polynomial_t(input, n):
    """The Chebyshev polynomial of the first kind ``T_n(input)`` (``cos(n acos x)`` inside
    (-1, 1) from degree 7 on, as PyTorch's).

    >>> import tracegrad as tg
    >>> tg.special.chebyshev_polynomial_t(tg.tensor([0.5, 2.0]), tg.tensor([2, 3]))
    tensor([-0.5000, 26.0000])
    """
    return _apply("chebyshev_polynomial_t", input, n)


def chebyshev_polynomial_u(input, n):
    """The Chebyshev polynomial of the second kind ``U_n(input)``."""
    return _apply("chebyshev_polynomial_u", input, n)


def chebyshev_polynomial_v(input, n):
    """The Chebyshev polynomial of the third kind ``V_n(input)``."""
    return _apply("chebyshev_polynomial_v", input, n)


def chebyshev_polynomial_w(input, n):
    """The Chebyshev polynomial of the fourth kind ``W_n(input)``."""
    return _apply("chebyshev_polynomial_w", input, n)


def shifted_chebyshev_polynomial_t(input, n):
    """``T_n(2 input - 1)``, the Chebyshev polynomial of the first kind on [0, 1]."""
    return _apply("shifted_chebyshev_polynomial_t", input, n)


def shifted_chebyshev_polynomial_u(input, n):
    """``U_n(2 input - 1)``."""
    return _apply("shifted_chebyshev_polynomial_u", input, n)


def shifted_chebyshev_polynomial_v(input, n):
    """``V_n(2 input - 1)``."""
    return _apply("shifted_chebyshev_polynomial_v", input, n)


def shifted_chebyshev_polynomial_w(input, n):
    """``W_n(2 input - 1)``."""
    return _apply("shifted_chebyshev_polynomial_w", input, n)


def hermite_polynomial_h(input, n):
    """The physicists' Hermite polynomial ``H_n(input)`` (NaN above degree 128 in float32, 512
    in float64, as PyTorch's)."""
    return _apply("hermite_polynomial_h", input, n)


def hermite_polynomial_he(input, n):
    """The probabilists' Hermite polynomial ``He_n(input)`` (NaN above degree 128 in float32,
    512 in float64, as PyTorch's)."""
    return _apply("hermite_polynomial_he", input, n)


def laguerre_polynomial_l(input, n):
    """The Laguerre polynomial ``L_n(input)``.

    >>> import tracegrad as tg
    >>> tg.special.laguerre_polynomial_l(tg.tensor([0.0, 1.0]), 2)
    tensor([ 1.0000, -0.5000])
    """
    return _apply("laguerre_polynomial_l", input, n)


def legendre_polynomial_p(input, n):
    """The Legendre polynomial ``P_n(input)``."""
    return _apply("legendre_polynomial_p", input, n)
