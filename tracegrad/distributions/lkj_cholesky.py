"""``LKJCholesky(dim, concentration)`` (PyTorch's, after NumPyro's): the lower Cholesky factors
``L`` of correlation matrices ``L L^T`` with density proportional to ``det(L L^T)^(eta - 1)``.
``sample`` is the onion method (Lewandowski, Kurowicka and Joe, 2009, section 3): row ``i``
is a uniform direction in its first ``i`` coordinates scaled by the square root of a Beta draw,
the diagonal completing the row to unit norm. The Beta draws are eager (a compiled function
breaks its graph there); the directions come from the seeded noise."""
from __future__ import annotations

import math

from ..core import creation
from .._api import functional as F
from .._api import arithmetic as MX
from ..autograd.grad_mode import no_grad
from .._api.composites import tril
from ..core.dtypes import finfo
from .._api.rearrange import diag_embed
from . import constraints
from .distribution import Distribution, broadcast_all
from .gamma_family import Beta
from .noise import noise

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """``LKJCholesky(dim, concentration=1.0)``: Cholesky factors of ``dim x dim`` correlation
    matrices; concentration 1 is uniform over correlation matrices, larger values favour the
    identity.

    >>> import tracegrad as tg
    >>> d = tg.distributions.LKJCholesky(3, 0.5)
    >>> d.log_prob(tg.eye(3))
    tensor(-2.5310)
    >>> L = d.sample()
    >>> tg.allclose((L @ L.T).diagonal(), tg.ones(3))
    True
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the onion method's Beta(i / 2, eta + (dim - 2 - i) / 2) for row i (row 0 draws none;
        # PyTorch keeps a placeholder Beta(1/2, .) there so that the rows line up)
        offset = creation.arange(dim - 1, dtype=self.concentration.dtype)
        offset = F.cat([creation.zeros(1, dtype=offset.dtype), offset])
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, F.unsqueeze(marginal, -1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new._beta = self._beta.expand(tuple(new.batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape=()):
        with no_grad():
            y = F.unsqueeze(self._beta.sample(sample_shape), -1)
            normal = tril(noise("normal", self._extended_shape(sample_shape), y), -1)
            norm = F.sqrt(F.sum(normal ** 2, -1, keepdim=True))
            # (row 0 has no coordinates: 0 / 0 there, made 0)
            first_row = F.unsqueeze(creation.arange(self.dim) == 0, -1)
            direction = F.where(first_row, 0.0, normal / norm)
            w = F.sqrt(y) * direction
            diag = F.sqrt(F.clamp(1 - F.sum(w ** 2, -1), min=finfo(w.dtype).tiny))
            return w + diag_embed(diag)

    def log_prob(self, value):
        self._validate_sample(value)
        dim = self.dim
        diag = value.diagonal(0, -1, -2)[..., 1:]
        order = creation.arange(2, dim + 1, dtype=self.concentration.dtype)
        order = 2 * F.unsqueeze(self.concentration - 1, -1) + dim - order
        unnormalized = F.sum(order * F.log(diag), -1)
        dm1 = dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + MX.mvlgamma(alpha - 0.5, dm1) - MX.lgamma(alpha) * dm1
        return unnormalized - normalizer
