"""``VonMises`` (PyTorch's): the circular normal on [-pi, pi), density
``exp(kappa cos(x - loc)) / (2 pi I0(kappa))``. The Bessel functions are PyTorch's polynomial
approximations (Abramowitz and Stegun 9.8.1-9.8.4, good to ~1e-7 relative), so values match
its. Samples come from Best and Fisher's rejection sampler, eagerly in NumPy (a compiled
function breaks its graph there); there is no rsample, as in PyTorch.

>>> import tracegrad as tg
>>> tg.distributions.VonMises(tg.tensor(0.0), tg.tensor(2.0)).log_prob(tg.tensor(0.5))
tensor(-0.9067)
"""
from __future__ import annotations

import math

import numpy as np

from .._api import functional as F
from ..autograd.grad_mode import no_grad
from . import constraints
from .distribution import Distribution, broadcast_all
from .noise import draw

__all__ = ["VonMises"]

_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2)
_I0_LARGE = (0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
             -0.1647633e-1, 0.392377e-2)
_I1_SMALL = (0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3)
_I1_LARGE = (0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
             0.1787654e-1, -0.420059e-2)


def _eval_poly(y, coef):
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def log_modified_bessel(x, order=0):
    """``log I_order(x)`` for x > 0, order 0 or 1 (PyTorch's approximation)."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    small_coef, large_coef = (_I0_SMALL, _I0_LARGE) if order == 0 else (_I1_SMALL, _I1_LARGE)
    small = _eval_poly((x / 3.75) ** 2, small_coef)
    if order == 1:
        small = F.abs(x) * small
    large = x - 0.5 * F.log(x) + F.log(_eval_poly(3.75 / x, large_coef))
    return F.where(x < 3.75, F.log(small), large)


def _rejection_sample(loc, kappa, rng):
    """Best and Fisher's sampler, in double, until every element is accepted."""
    tau = 1 + np.sqrt(1 + 4 * kappa ** 2)
    rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
    with np.errstate(all="ignore"):
        r = np.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))
    x = np.zeros(loc.shape)
    done = np.zeros(loc.shape, bool)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + loc.shape)
        z = np.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        with np.errstate(all="ignore"):
            accept = ~done & (((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0))
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(f), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """``VonMises(loc, concentration)``: an angle around ``loc``, concentration kappa > 0."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def log_prob(self, value):
        self._validate_sample(value)
        return (self.concentration * F.cos(value - self.loc) - math.log(2 * math.pi)
                - log_modified_bessel(self.concentration, order=0))

    mean = mode = property(lambda self: self.loc)

    @property
    def variance(self):
        k = self.concentration
        return 1 - F.exp(log_modified_bessel(k, order=1) - log_modified_bessel(k, order=0))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with no_grad():
            loc, kappa = F.expand(self.loc, shape), F.expand(self.concentration, shape)
            return draw(self.loc, shape, lambda rng, s: _rejection_sample(
                loc.numpy().astype(np.float64), kappa.numpy().astype(np.float64), rng))
