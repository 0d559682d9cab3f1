"""Weight initialisation (PyTorch's ``torch.nn.init``), drawing from the global generator that
``tg.manual_seed`` seeds (or from the ``generator`` passed in). Every function fills the tensor
in place without recording autograd history and returns it.

>>> import tracegrad as tg
>>> _ = tg.manual_seed(0)
>>> w = tg.empty(3, 5)
>>> _ = tg.nn.init.kaiming_uniform_(w, a=5 ** 0.5)
>>> float(w.abs().max()) <= 1 / 5 ** 0.5
True
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..core.creation import default_generator, from_numpy


def _rng(generator):
    return (generator or default_generator).rng


def _fill(tensor, array):
    """Write ``array`` into ``tensor`` in place, outside autograd."""
    from ..core import tracing as trace

    # initialisers draw random numbers eagerly: they cannot become part of a compiled program
    trace.graph_break("nn.init (random weight initialisation) inside a compiled function")
    with no_grad():
        tensor.copy_(from_numpy(np.asarray(array, dtype=tensor.dtype.np).reshape(tuple(tensor.shape))))
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    return _fill(tensor, _rng(generator).uniform(a, b, tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std**2)."""
    return _fill(tensor, _rng(generator).normal(mean, std, tuple(tensor.shape)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std**2) restricted to [a, b] (rejected samples are redrawn)."""
    rng = _rng(generator)
    out = rng.normal(mean, std, tuple(tensor.shape))
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = rng.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(tensor, out)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix times ``gain`` (PyTorch's algorithm): the QR
    factorization of a standard normal matrix (rows = dim 0, the other dims flattened; its
    transpose when wider than tall), Q's columns multiplied by the signs of R's diagonal (so
    that Q is uniformly distributed). Empty tensors are left as they are.

    >>> import tracegrad as tg
    >>> _ = tg.manual_seed(0)
    >>> w = tg.nn.init.orthogonal_(tg.empty(3, 5))
    >>> tg.allclose(w @ w.T, tg.eye(3), atol=1e-6)
    True
    """
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    return _fill(tensor, (q.T if rows < cols else q) * gain)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Fill with U(-bound, bound), bound = gain * sqrt(3 / fan). ``Linear`` and ``Conv2d`` use
    ``a=sqrt(5)``, which gives bound = 1 / sqrt(fan_in)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-dim convolution weight with the Dirac delta: each of the first
    ``min(out_channels / groups, in_channels)`` output channels of each group passes its input
    channel through unchanged (the kernel's centre is 1, the rest 0)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    weight = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            weight[(g * per_group + d, d) + centre] = 1
    return _fill(tensor, weight)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-dim tensor from N(0, std^2), then zero ``ceil(sparsity * rows)`` random rows of
    each column."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    rng = _rng(generator)
    weight = rng.normal(0.0, std, (rows, cols))
    zeros = math.ceil(sparsity * rows)
    for c in range(cols):
        weight[rng.permutation(rows)[:zeros], c] = 0
    return _fill(tensor, weight)


def _deprecated(old, new):
    def init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    init.__name__ = old
    init.__doc__ = f"Deprecated alias of ``{new.__name__}`` (a FutureWarning, as in PyTorch)."
    return init


uniform = _deprecated("uniform", uniform_)
normal = _deprecated("normal", normal_)
constant = _deprecated("constant", constant_)
eye = _deprecated("eye", eye_)
dirac = _deprecated("dirac", dirac_)
xavier_uniform = _deprecated("xavier_uniform", xavier_uniform_)
xavier_normal = _deprecated("xavier_normal", xavier_normal_)
kaiming_uniform = _deprecated("kaiming_uniform", kaiming_uniform_)
kaiming_normal = _deprecated("kaiming_normal", kaiming_normal_)
orthogonal = _deprecated("orthogonal", orthogonal_)
sparse = _deprecated("sparse", sparse_)
