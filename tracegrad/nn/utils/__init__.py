"""``tg.nn.utils``: gradient norms and clipping, flattening parameters, the older hook-based
``weight_norm`` and ``spectral_norm``, conv/linear + batch-norm fusion (``fusion``),
``skip_init`` and ``stateless.functional_call``, as ``torch.nn.utils``; ``tg.nn.utils.rnn``: padding variable-length sequences;
``parametrize`` and ``parametrizations``: tensors computed from others (weight and spectral
normalization).

>>> import tracegrad as tg
>>> w = tg.nn.Parameter(tg.ones(4))
>>> (w * 3).sum().backward()
>>> tg.nn.utils.clip_grad_norm_([w], 1.0)
tensor(6.)
>>> w.grad
tensor([0.5000, 0.5000, 0.5000, 0.5000])
"""
from __future__ import annotations

import types
import warnings

from ..._api import composites as C
from ..._api import functional as T
from ...autograd.grad_mode import no_grad
from ...core.tensor import Tensor
from . import fusion, parametrizations, parametrize, prune, rnn, stateless  # (tg.nn.utils.rnn, ...)
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters):
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type`` norm of the norms of ``tensors`` (as if they were concatenated);
    RuntimeError with ``error_if_nonfinite`` when it is NaN or infinite.

    >>> import tracegrad as tg
    >>> tg.nn.utils.get_total_norm([tg.tensor([3.0]), tg.tensor([4.0])])
    tensor(5.)
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return T.to_tensor(0.0)
    with no_grad():
        total = C.norm(T.stack([C.norm(t, norm_type) for t in tensors]), norm_type)
    if error_if_nonfinite and not bool(C.isfinite(total).item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and scale the "
                           "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm +
    1e-6))`` (``total_norm`` from ``get_total_norm``, possibly of more parameters)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        scale = T.clamp(T.div(float(max_norm), T.add(total_norm, 1e-6)), max=1.0)
        for g in grads:
            g.mul_(T.cast(scale, g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns that norm (before clipping)."""
    if isinstance(parameters, types.GeneratorType):
        parameters = list(parameters)
        if not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    parameters = _as_list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_`` (a FutureWarning, as in PyTorch)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-float(clip_value), float(clip_value))


def parameters_to_vector(parameters):
    return T.cat([T.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into the parameters (in place)."""
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(T.reshape(T.narrow(vec, 0, start, n), tuple(p.shape)))
            start += n


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters and buffers are left uninitialized, as
    PyTorch's (here: zeroed after construction; the module must take a ``device`` argument, as
    PyTorch requires)."""
    import inspect

    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    module = module_cls(*args, **kwargs)
    with no_grad():
        for t in list(module.parameters()) + list(module.buffers()):
            t.zero_()
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """The module itself: tracegrad tensors have one memory layout (contiguous, row-major),
    so there is nothing to convert."""
    return module


convert_conv3d_weight_memory_format = convert_conv2d_weight_memory_format
# PyTorch's submodules of these names, for code that imports the functions from them
clip_grad = types.SimpleNamespace(clip_grad_norm_=clip_grad_norm_, clip_grad_norm=clip_grad_norm,
                                  clip_grad_value_=clip_grad_value_, get_total_norm=get_total_norm,
                                  clip_grads_with_norm_=clip_grads_with_norm_)
convert_parameters = types.SimpleNamespace(parameters_to_vector=parameters_to_vector,
                                           vector_to_parameters=vector_to_parameters)
memory_format = types.SimpleNamespace(convert_conv2d_weight_memory_format=convert_conv2d_weight_memory_format,
                                      convert_conv3d_weight_memory_format=convert_conv3d_weight_memory_format)
