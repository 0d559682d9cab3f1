"""``tg.nn.utils.parametrizations`` (PyTorch's): ``weight_norm`` and ``spectral_norm`` as
parametrizations (``tg.nn.utils.parametrize``), with PyTorch's state-dict keys
(``parametrizations.weight.original0/1``; ``..._u``/``_v`` for the spectral norm's vectors).

>>> import tracegrad as tg
>>> layer = tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(2, 3))
>>> sorted(layer.state_dict())
['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""
from __future__ import annotations

from ..._api import composites as C
from ..._api import functional as T
from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from ..modules.module import Module
from . import parametrize

__all__ = ["weight_norm", "spectral_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (keeping that dim, the others 1);
    over everything for ``dim=-1``."""
    if dim == -1:
        return C.norm(v, pow)
    dims = tuple(d for d in range(v.ndim) if d != dim % v.ndim)
    return C.norm(v, pow, dims, keepdim=True)


def _weight_norm(v, g, dim):
    return T.mul(v, T.div(g, norm_except_dim(v, 2, dim)))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name> = g * v / ||v||`` (the norm over every dim but ``dim``; ``None``: the
    whole tensor) with ``g`` (``original0``) and ``v`` (``original1``) the parameters. State
    dicts of the older ``nn.utils.weight_norm`` (``weight_g``/``weight_v``) load too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_keys(state_dict, prefix, *args):
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module._register_load_state_dict_pre_hook(load_old_keys)
    return module


class _SpectralNorm(Module):
    """``W / sigma`` with ``sigma`` the largest singular value of ``W`` (as a matrix with
    ``dim`` first), estimated by power iteration: ``n_power_iterations`` steps per forward in
    training mode, kept in the buffers ``_u`` and ``_v``."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] "
                             f"but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._matrix(weight)
            h, w = matrix.shape
            u = matrix.new_empty(h).normal_(0, 1)
            v = matrix.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", _normalize(u, eps))
            self.register_buffer("_v", _normalize(v, eps))
            self._power_method(matrix, 15)

    def _matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, matrix, iterations):
        with no_grad():
            matrix = matrix.detach()
            for _ in range(iterations):
                self._u.copy_(_normalize(T.matmul(matrix, self._v), self.eps))
                self._v.copy_(_normalize(T.matmul(matrix.T, self._u), self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return _normalize(weight, self.eps)
        matrix = self._matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = T.dot(u, T.matmul(matrix, v))
        return T.div(weight, sigma)

    def right_inverse(self, value):
        return value  # (PyTorch's: the weight is stored as given, not projected)


def _normalize(x, eps):
    from ..functional import normalize

    return normalize(x, dim=0, eps=eps)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name>`` divided by its spectral norm (power iteration, see ``_SpectralNorm``);
    ``dim`` defaults to 0, or 1 for transposed convolutions."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if "ConvTranspose" in type(module).__name__ else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
