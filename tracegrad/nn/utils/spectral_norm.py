"""The older, hook-based ``nn.utils.spectral_norm`` / ``remove_spectral_norm`` (PyTorch keeps
them beside ``nn.utils.parametrizations.spectral_norm``; state dicts saved with them hold
``weight_orig``, ``weight_u`` and ``weight_v``): ``weight`` is ``weight_orig / sigma``, ``sigma``
estimated before every forward by power iteration (one step per forward in training mode).

>>> import tracegrad as tg
>>> layer = tg.nn.utils.spectral_norm(tg.nn.Linear(4, 3))
>>> sorted(layer.state_dict())
['bias', 'weight_orig', 'weight_u', 'weight_v']
"""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ..functional import normalize
from ..parameter import Parameter


class SpectralNorm:
    """The forward pre-hook recomputing ``module.<name>`` (PyTorch's order: ``v`` then ``u``
    each power step, then ``sigma = u . W v``)."""

    def __init__(self, name, n_power_iterations, dim, eps):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(mat.t() @ u, dim=0, eps=self.eps))
                    u.copy_(normalize(mat @ v, dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()  # (the next forward's update must not touch this one's graph)
        return weight / (u * (mat @ v)).sum()

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize ``module.<name>`` as ``weight_orig / sigma(weight_orig)``; ``dim`` is the
    output dim (default 0, 1 for transposed convolutions)."""
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if dim is None:
        dim = 1 if "ConvTranspose" in type(module).__name__ else 0
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    with no_grad():
        mat = fn.matrix(weight)
        h, w = mat.shape
        u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
        v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo ``spectral_norm``: ``module.<name>`` becomes a parameter holding the current
    normalized weight."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            weight = hook.compute_weight(module, do_power_iteration=False)
            delattr(module, name)
            del module._parameters[name + "_orig"]
            del module._buffers[name + "_u"]
            del module._buffers[name + "_v"]
            module.register_parameter(name, Parameter(weight.detach()))
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
