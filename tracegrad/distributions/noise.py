"""The two sources of randomness of the distributions, in one place: ``noise``, standard
uniform or normal noise from the seeded ``uniform_noise`` op (a compiled function samples
without breaking its graph, the seed a program input as dropout's), and ``draw``, NumPy's
generators run eagerly for what noise cannot express cheaply (gamma, Poisson, binomial and
rejection samplers; a compiled function breaks its graph there).

>>> import tracegrad as tg
>>> from tracegrad.distributions.noise import noise
>>> noise("normal", (2, 3), tg.zeros(1)).shape
tracegrad.Size([2, 3])
"""
from __future__ import annotations

import math

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from .._api import functional as F
from ..ops import nn as N

__all__ = ["noise", "draw"]


def noise(kind, shape, like):
    """Standard noise of ``shape`` in ``like``'s dtype: ``kind`` "uniform" on [0, 1), or
    "normal" (Box-Muller on two uniforms)."""
    def uniform():
        return N.UNIFORM_NOISE(creation.seed_tensor(), shape=tuple(shape), low=0.0, high=1.0,
                               dtype=_dt.float64)

    u = uniform()
    if kind == "normal":  # (1 - u is in (0, 1]: its log is finite)
        u = F.sqrt(-2.0 * F.log(1.0 - u)) * F.cos(2 * math.pi * uniform())
    return F.cast(u, like.dtype)


def draw(like, shape, sample):
    """``sample(rng, shape)`` as a tensor of ``shape`` in ``like``'s dtype, from the global
    generator (eagerly; a compiled function breaks its graph here, so ``sample`` reads its
    parameters' values itself, after that check)."""
    from ..core import tracing as trace

    if trace.current_tracer() is not None:
        trace.graph_break("sampling a distribution (random numbers) inside a compiled function")
    rng = creation.default_generator.rng
    return creation.tensor(np.asarray(sample(rng, tuple(shape))), dtype=like.dtype)
