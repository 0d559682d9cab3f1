"""Gamma and Dirichlet samples with PyTorch's implicit reparametrization gradients.

A gamma sample has no explicit reparametrization (``x = g(alpha, noise)``), so, as PyTorch,
the samples are drawn first (eagerly, by NumPy's generators: a compiled function breaks its
graph here) and their gradient in the concentration is the implicit one,
``dx/dalpha = -(dF/dalpha)(x) / pdf(x)``, from the primitives of ops/gamma_grads.py (PyTorch's
approximations). Everything downstream of the draw (scaling by the rate, normalising, the
Student-t quotient) differentiates as usual.

>>> import tracegrad as tg
>>> from tracegrad.distributions.gamma_sampling import standard_gamma
>>> alpha = tg.tensor([2.0, 3.0], requires_grad=True)
>>> x = standard_gamma(alpha)
>>> x.grad_fn.name()
'_StandardGammaBackward'
>>> tg.distributions.Gamma(alpha, 1.0).rsample((5,)).shape
tracegrad.Size([5, 2])
"""
from __future__ import annotations

from ..autograd.function import Function
from ..core.dtypes import finfo
from ..ops.gamma_grads import DIRICHLET_GRAD, STANDARD_GAMMA_GRAD
from .noise import draw

__all__ = ["standard_gamma", "dirichlet"]


def _gamma_draws(alpha):
    return draw(alpha, alpha.shape, lambda rng, s: rng.standard_gamma(alpha.detach().numpy(), s))


class _StandardGamma(Function):
    """Gamma(alpha, 1) samples of ``alpha``'s shape (PyTorch's ``_standard_gamma``)."""

    @staticmethod
    def forward(ctx, alpha):
        x = _gamma_draws(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * STANDARD_GAMMA_GRAD(alpha, x)


class _Dirichlet(Function):
    """Dirichlet(alpha) samples over the last dim of ``alpha`` (PyTorch's ``_Dirichlet``): the
    components of normalised gamma draws, kept inside (0, 1)."""

    @staticmethod
    def forward(ctx, alpha):
        g = _gamma_draws(alpha)
        info = finfo(alpha.dtype)
        x = (g / g.sum(-1, keepdim=True)).clamp(info.tiny, 1 - info.eps)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        total = alpha.sum(-1, keepdim=True).expand_as(alpha)
        # (dirichlet_grad is d x_i / d alpha_i over (1 - x_i); the other components move by
        # -x_j times as much, since the sample stays on the simplex)
        return DIRICHLET_GRAD(x, alpha, total) * (grad - (x * grad).sum(-1, keepdim=True))


def standard_gamma(alpha):
    return _StandardGamma.apply(alpha)


def dirichlet(alpha):
    return _Dirichlet.apply(alpha)
