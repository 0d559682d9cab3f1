"""``tg.special`` (PyTorch's ``torch.special``): the special functions under their SciPy-style
names, composed of tracegrad's primitives (so they differentiate and compile).

>>> import tracegrad as tg
>>> tg.special.ndtr(tg.tensor([0.0, 1.0]))
tensor([0.5000, 0.8413])
>>> tg.special.entr(tg.tensor([0.0, 0.5]))
tensor([0.0000, 0.3466])
"""
from __future__ import annotations

import math

from . import functional as F
from . import math_extras as MX
from .nn.functional import log_softmax, softmax  # noqa: F401
from .tensor import Tensor

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "gammainc", "gammaincc", "log_softmax", "softmax", "logsumexp", "xlogy", "xlog1py", "sinc", "round",
           "ndtr", "log_ndtr", "entr", "log1p", "expm1", "exp2"]

expit = F.sigmoid
logit = MX.logit
erf, erfc, erfinv = F.erf, F.erfc, MX.erfinv
gammaln, digamma, psi, polygamma, multigammaln = MX.lgamma, MX.digamma, MX.digamma, MX.polygamma, MX.mvlgamma
gammainc, gammaincc = MX.igamma, MX.igammac
logsumexp, xlogy, sinc, round = F.logsumexp, MX.xlogy, MX.sinc, F.round  # noqa: A001
log1p, expm1, exp2 = F.log1p, F.expm1, F.exp2

_SQRT_HALF = math.sqrt(0.5)


def ndtr(input):
    """The standard normal distribution function ``P(N(0, 1) <= x)``."""
    return 0.5 * F.erfc(-input * _SQRT_HALF)


def log_ndtr(input):
    """``log ndtr(x)``, finite far into the lower tail (an asymptotic series below -20, where
    ``ndtr`` itself underflows)."""
    x = input
    far = x < -20
    xs = F.where(far, x, -20.0)  # (each branch computed where it is valid, for finite gradients)
    z = F.where(far, -1.0, x)
    inv2 = 1 / (xs * xs)
    series = F.log1p(inv2 * (-1 + inv2 * (3 + inv2 * (-15 + inv2 * 105))))
    tail = -0.5 * xs * xs - F.log(-xs) - 0.5 * math.log(2 * math.pi) + series
    return F.where(far, tail, F.log(0.5 * F.erfc(-z * _SQRT_HALF)))


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
