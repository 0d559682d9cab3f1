"""``tg.nn.functional`` (PyTorch's ``torch.nn.functional``): activations, losses, normalisation,
embedding, dropout, convolution and pooling. Every function here is a composite of registry
primitives and carries no gradient rule of its own.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> logits = tg.tensor([[2.0, 0.5, -1.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, tg.tensor([0]))
>>> round(loss.item(), 4)
0.2413
>>> loss.backward()
>>> logits.grad.shape
tracegrad.Size([1, 3])
"""
from __future__ import annotations

import math

import numpy as np

from ...core.placement import on_inputs_device as _on_inputs_device
from ... import amp as _amp
from ...core import dtypes as _dt
from ..._api import functional as T
from ...ops import index as I
from ...ops import nn as N
from ...ops.shapes import wrap_dim, wrap_dim_of_nonscalar, wrap_dim_or_none
from ...autograd.graph import named_backward  # (grad_fn names as PyTorch's)

__all__ = ["linear", "relu", "gelu", "sigmoid", "tanh", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits", "layer_norm",
           "embedding", "dropout", "conv2d", "max_pool2d", "avg_pool2d", "unfold", "fold",
           "one_hot", "silu", "leaky_relu", "softplus", "elu", "mish", "hardtanh", "logsigmoid",
           "softsign", "glu", "binary_cross_entropy", "smooth_l1_loss", "huber_loss", "normalize",
           "cosine_similarity", "batch_norm", "pad", "conv1d", "max_pool1d", "avg_pool1d",
           "scaled_dot_product_attention", "group_norm", "conv_transpose2d"]


# ----------------------------------------------------------------------------- activations
# (PyTorch's linear: addmm with a bias, mm without, on 2-d inputs; on higher ranks the view
# after addmm, or matmul's unsafe view)
@named_backward(lambda input, weight, bias=None: None if input.dim() < 2 else
                ("AddmmBackward0" if bias is not None else "MmBackward0") if input.dim() == 2 else
                "ViewBackward0" if bias is not None else "UnsafeViewBackward0")
@_amp.lower_precision
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    out = T.matmul(input, T.t(weight) if weight.ndim == 2 else weight)
    return out if bias is None else T.add(out, bias)


def _inplace_result(input, out, inplace):
    if not inplace:
        return out
    from ...core.views import assign

    return assign(input, out)


def relu(input, inplace=False):
    return _inplace_result(input, T.relu(input), inplace)


def sigmoid(input):
    return T.sigmoid(input)


def tanh(input):
    return T.tanh(input)


@named_backward("SiluBackward0")
def silu(input, inplace=False):
    return _inplace_result(input, T.mul(input, T.sigmoid(input)), inplace)


@named_backward("LeakyReluBackward0")
def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _inplace_result(input, T.where(T.gt(input, 0), input, T.mul(input, negative_slope)),
                           inplace)


@named_backward("SoftplusBackward0")
def softplus(input, beta=1.0, threshold=20.0):  # noqa: F811  (PyTorch's parameter name; F.threshold is imported below)
    scaled = T.mul(input, beta) if beta != 1 else input
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|), linear above the threshold like PyTorch
    soft = T.add(T.relu(scaled), T.log1p(T.exp(T.neg(T.abs(scaled)))))
    soft = T.div(soft, beta) if beta != 1 else soft
    return T.where(T.gt(scaled, threshold), input, soft)


@named_backward("EluBackward0")
def elu(input, alpha=1.0, inplace=False):
    return _inplace_result(input, T.where(T.gt(input, 0), input, T.mul(T.expm1(input), alpha)), inplace)


@named_backward("MishBackward0")
def mish(input, inplace=False):
    return _inplace_result(input, T.mul(input, T.tanh(softplus(input))), inplace)


@named_backward("HardtanhBackward0")
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _inplace_result(input, T.clamp(input, min_val, max_val), inplace)


@named_backward("LogSigmoidBackward0")
def logsigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``."""
    return T.neg(T.add(T.relu(T.neg(input)), T.log1p(T.exp(T.neg(T.abs(input))))))


def softsign(input):
    return T.div(input, T.add(T.abs(input), 1))


def glu(input, dim=-1):
    """``a * sigmoid(b)`` of the two halves of ``dim``."""
    d = wrap_dim_of_nonscalar(dim, input.ndim, "glu does not support scalars because halving size "
                              "must be even")
    half = input.shape[d] // 2
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return T.mul(T.narrow(input, d, 0, half), T.sigmoid(T.narrow(input, d, half, half)))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


@named_backward("GeluBackward0")
def gelu(input, approximate="none"):
    """``x * Phi(x)`` with the exact erf (``"none"``) or PyTorch's tanh approximation."""
    if approximate == "none":
        return T.mul(T.mul(input, 0.5), T.add(T.erf(T.mul(input, 1.0 / math.sqrt(2.0))), 1.0))
    if approximate == "tanh":
        inner = T.mul(T.add(input, T.mul(T.mul(T.mul(input, input), input), 0.044715)),
                      _SQRT_2_OVER_PI)
        return T.mul(T.mul(input, 0.5), T.add(T.tanh(inner), 1.0))
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def _softmax_dim(input, dim):
    if dim is None:
        # PyTorch's legacy implicit choice (with a deprecation warning there)
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return wrap_dim_or_none(dim, input.ndim)


@named_backward("LogSoftmaxBackward0")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``x - logsumexp(x, dim)``, stable for large inputs."""
    if dtype is not None:
        input = T.cast(input, _dt.to_dtype(dtype))
    d = _softmax_dim(input, dim)
    if d is None:
        return T.sub(input, input)  # a 0-dim softmax is 1, its log 0
    return T.sub(input, T.logsumexp(input, d, keepdim=True))


@named_backward("SoftmaxBackward0")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim``."""
    if dtype is not None:
        input = T.cast(input, _dt.to_dtype(dtype))
    d = _softmax_dim(input, dim)
    if d is None:
        return T.add(T.mul(input, 0.0), 1.0)
    shifted = T.sub(input, T.amax(input, d, keepdim=True).detach())
    e = T.exp(shifted)
    return T.div(e, T.sum(e, d, keepdim=True))


# ----------------------------------------------------------------------------- losses
def _legacy_reduction(size_average, reduce, reduction):
    """The reduction PyTorch's deprecated ``size_average``/``reduce`` pair asks for, when either
    is given (each None counts as True), with PyTorch's warning; else ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    legacy = ("mean" if size_average else "sum") if reduce else "none"
    import warnings

    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{legacy}' "
                  "instead.", stacklevel=3)
    return legacy


def _weighted_reduce(loss, weight, reduction, input, weighted_mean=True):
    """An elementwise ``weight`` (input's size) applied; the mean is the weighted mean (sum /
    sum of weights), as PyTorch's mse_loss and l1_loss, or the plain mean of the weighted
    terms, as its huber_loss."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = T.mul(loss, weight)
    if reduction == "mean" and weighted_mean:
        return T.div(T.sum(loss), T.sum(weight))
    return _reduce(loss, reduction)


def _reduce(loss, reduction):
    if reduction == "mean":
        return T.mean(loss)
    if reduction == "sum":
        return T.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


@_amp.float32
@named_backward("MseLossBackward0")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        import warnings

        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=2)
    diff = T.sub(input, target)
    return _weighted_reduce(T.mul(diff, diff), weight, reduction, input)


@_amp.float32
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _weighted_reduce(T.abs(T.sub(input, target)), weight, reduction, input)


def _class_weight(weight, nclass, ndim, dtype):
    """``weight`` shaped to broadcast along the class dim (dim 1) of an ``ndim`` input."""
    if weight.shape != (nclass,):
        raise RuntimeError(f"weight tensor should be defined either for all {nclass} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    return T.reshape(T.cast(weight, dtype), [nclass] + [1] * (ndim - 2)) if ndim > 1 else weight


def _mean_over_weight(loss_sum, weight_sum):
    """``loss_sum / weight_sum``; with nothing to weigh (every target ignored) NaN, as PyTorch's,
    but with zero gradients, as its nll_loss backward gives (0/0 would give NaN ones)."""
    empty = T.eq(weight_sum, 0)
    return T.where(empty, float("nan"), T.div(loss_sum, T.where(empty, 1.0, weight_sum)))


@_amp.float32
@named_backward("NllLossBackward0")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of integer ``target`` classes under log-probabilities ``input``
    of shape (C,), (N, C) or (N, C, d1, ...)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    cdim = 0 if input.ndim == 1 else 1
    want = tuple(input.shape[:cdim]) + tuple(input.shape[cdim + 1:])
    if tuple(target.shape) != want:
        raise ValueError(f"Expected target of shape {list(want)} for input of shape "
                         f"{list(input.shape)}, got {list(target.shape)}")
    nclass = input.shape[cdim]
    keep = T.ne(target, ignore_index)
    safe = T.where(keep, target, 0)  # ignored positions read class 0, then get weight 0
    safe = I.check_index(safe.long(), nclass, cdim, "target")
    picked = T.squeeze(T.gather(input, cdim, T.unsqueeze(safe, cdim).long()), cdim)
    w = T.cast(keep, input.dtype)
    if weight is not None:
        w = T.mul(w, I.index_select(T.cast(weight, input.dtype), 0, T.reshape(safe, -1).long())
                  .reshape(tuple(safe.shape)))
    loss = T.neg(T.mul(picked, w))
    if reduction == "mean":
        return _mean_over_weight(T.sum(loss), T.sum(w))
    return _reduce(loss, reduction)


@_amp.float32
@named_backward("NllLossBackward0")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for integer targets; with floating targets of
    the input's shape, the cross entropy against those class probabilities.
    ``label_smoothing`` mixes the target with the uniform distribution, as in PyTorch."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    cdim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, cdim)
    nclass = input.shape[cdim]
    if target.dtype.is_floating_point:
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected floating-point target of shape {list(input.shape)} "
                               f"(class probabilities), got {list(target.shape)}")
        if label_smoothing > 0:
            target = T.add(T.mul(target, 1 - label_smoothing), label_smoothing / nclass)
        terms = T.mul(logp, target)
        if weight is not None:
            terms = T.mul(terms, _class_weight(weight, nclass, input.ndim, input.dtype))
        loss = T.neg(T.sum(terms, cdim))
        if reduction == "mean":
            n = loss.numel()
            return T.div(T.sum(loss), float(n)) if n else T.sum(loss)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    # PyTorch: (1 - eps) * nll + eps / C * smooth, smooth = -sum_c w_c logp_c over kept items
    keep = T.cast(T.ne(target, ignore_index), input.dtype)
    terms = logp if weight is None else T.mul(logp, _class_weight(weight, nclass, input.ndim,
                                                                   input.dtype))
    smooth = T.mul(T.neg(T.sum(terms, cdim)), keep)
    if reduction == "mean":
        if weight is None:
            smooth = _mean_over_weight(T.sum(smooth), T.sum(keep))
        else:
            safe = T.where(T.ne(target, ignore_index), target, 0).long()
            wt = T.mul(I.index_select(T.cast(weight, input.dtype), 0, T.reshape(safe, -1))
                       .reshape(tuple(safe.shape)), keep)
            smooth = _mean_over_weight(T.sum(smooth), T.sum(wt))
    else:
        smooth = _reduce(smooth, reduction)
    return T.add(T.mul(nll, 1 - label_smoothing), T.mul(smooth, label_smoothing / nclass))


@_amp.float32
@named_backward("BinaryCrossEntropyWithLogitsBackward0")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """``-[pw * y * log sigmoid(x) + (1 - y) * log(1 - sigmoid(x))]``, computed stably."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    # log(1 + e^-x) = max(-x, 0) + log1p(e^-|x|), with max(u, 0) as (clamp(u, min=0) + u -
    # clamp(u, max=0)) / 2: equal everywhere, but its slope at u = 0 is 1/2, so the gradient at
    # x = 0 is sigmoid(0) - y, PyTorch's (relu's slope 0 there gave 1/2 too much)
    u = T.neg(input)
    max_u_0 = T.mul(T.sub(T.add(T.clamp(u, min=0), u), T.clamp(u, max=0)), 0.5)
    softplus_neg = T.add(max_u_0, T.log1p(T.exp(T.neg(T.abs(input)))))
    if pos_weight is not None:
        log_weight = T.add(T.mul(T.sub(pos_weight, 1), target), 1)
        loss = T.add(T.mul(T.sub(1, target), input), T.mul(log_weight, softplus_neg))
    else:
        loss = T.add(T.mul(T.sub(1, target), input), softplus_neg)
    if weight is not None:
        loss = T.mul(loss, weight)
    return _reduce(loss, reduction)


def _clamped_logs(p):
    """log(p) and log(1 - p), each clamped at -100 as PyTorch's BCE does."""
    return T.clamp(T.log(p), min=-100.0), T.clamp(T.log(T.sub(1, p)), min=-100.0)


def _bce_function():
    """PyTorch's BCE as a Function with PyTorch's own derivative, (p - y) / max(p (1 - p),
    1e-12): finite where p is exactly 0 or 1 (a saturated float32 sigmoid), where the
    composite's 0 * inf would give NaN. Its backward is made of tracegrad ops, so it
    differentiates again and is captured by tg.compile like any custom Function."""
    from ...autograd.function import Function

    class BinaryCrossEntropy(Function):
        @staticmethod
        def forward(ctx, p, y):
            ctx.save_for_backward(p, y)
            log_p, log_q = _clamped_logs(p)
            return T.neg(T.add(T.mul(y, log_p), T.mul(T.sub(1, y), log_q)))

        @staticmethod
        def backward(ctx, g):
            p, y = ctx.saved_tensors
            gp = gy = None
            if ctx.needs_input_grad[0]:
                gp = T.div(T.mul(g, T.sub(p, y)), T.clamp(T.mul(T.sub(1, p), p), min=1e-12))
            if ctx.needs_input_grad[1]:
                log_p, log_q = _clamped_logs(p)
                gy = T.mul(g, T.sub(log_q, log_p))
            return gp, gy

    return BinaryCrossEntropy


_BCE = None


@_amp.float32
@named_backward("BinaryCrossEntropyBackward0")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-[y log p + (1 - y) log(1 - p)]`` of probabilities ``input``, each log clamped at
    -100 as in PyTorch (so that p = 0 or 1 give a finite loss), with PyTorch's gradient."""
    global _BCE
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the "
                         f"input size ({list(input.shape)}) is deprecated. Please ensure they have "
                         "the same size.")
    if _BCE is None:
        _BCE = _bce_function()
    loss = _BCE.apply(input, target)
    if weight is not None:
        loss = T.mul(loss, weight)
    return _reduce(loss, reduction)


@_amp.float32
@named_backward("SmoothL1LossBackward0")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` below ``beta``, ``|d| - 0.5 beta`` above (``|d|`` for beta 0)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = T.abs(T.sub(input, target))
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(T.where(T.lt(d, beta), T.mul(T.mul(d, d), 0.5 / beta), T.sub(d, 0.5 * beta)), reduction)


@_amp.float32
@named_backward("HuberLossBackward0")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` below ``delta``, ``delta (|d| - 0.5 delta)`` above."""
    d = T.abs(T.sub(input, target))
    loss = T.where(T.lt(d, delta), T.mul(T.mul(d, d), 0.5), T.mul(T.sub(d, 0.5 * delta), delta))
    return _weighted_reduce(loss, weight, reduction, input, weighted_mean=False)


# ----------------------------------------------------------------------------- normalisation, embedding
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``x / max(||x||_p, eps)`` along ``dim`` (written into ``out`` when given)."""
    from ..._api.composites import norm

    result = T.div(input, T.clamp(norm(input, p, dim, keepdim=True), min=eps))
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (PyTorch's clamping of
    each norm)."""
    from ..._api.composites import norm

    n1 = T.clamp(norm(x1, 2, dim), min=eps)
    n2 = T.clamp(norm(x2, 2, dim), min=eps)
    return T.div(T.sum(T.mul(x1, x2), dim), T.mul(n1, n2))


@named_backward("NativeBatchNormBackward0")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and any spatial dims: with the batch's
    statistics when ``training`` (updating ``running_mean``/``running_var`` in place with
    ``momentum``, the variance unbiased there as in PyTorch), else with the running ones."""
    if input.ndim < 2:
        raise ValueError(f"expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    shape = [1, c] + [1] * (input.ndim - 2)
    if training:
        n = int(np.prod([input.shape[d] for d in dims]))
        if n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        mean = T.mean(input, dims)
        centered = T.sub(input, T.reshape(mean, shape))
        var = T.mean(T.mul(centered, centered), dims)
        if running_mean is not None or running_var is not None:
            from ...autograd.grad_mode import no_grad

            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(T.mul(mean.detach(), momentum))
                if running_var is not None:
                    running_var.mul_(1 - momentum).add_(T.mul(var.detach(), momentum * n / (n - 1)))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("batch_norm: running_mean and running_var are needed when not training")
        mean, var = running_mean, running_var
        centered = T.sub(input, T.reshape(mean, shape))
    out = T.mul(centered, T.reshape(T.rsqrt(T.add(var, eps)), shape))
    if weight is not None:
        out = T.mul(out, T.reshape(weight, shape))
    if bias is not None:
        out = T.add(out, T.reshape(bias, shape))
    return out


@_on_inputs_device
def pad(input, pad, mode="constant", value=None):
    """Pad the last dims: ``pad`` is (left, right[, top, bottom, ...]) pairs, last dim first,
    as in PyTorch; negative sizes crop. ``mode``: ``"constant"`` (``value``, default 0),
    ``"reflect"`` (mirrored about the edge, the edge once), ``"replicate"`` (the edge
    repeated) or ``"circular"`` (wrapped around); the last three pad the last 1 to 3 dims of
    an input with 1 or 2 more dims than that.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.pad(tg.tensor([[1., 2., 3.]]), (2, 1), mode="reflect")
    tensor([[3., 2., 1., 2., 3., 2.]])
    """
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length must be divisible by 2 and at most twice the number of "
                         f"dims ({input.ndim}), got {len(pad)}")
    if mode == "constant":
        return _pad_constant(input, pad, value)
    if mode not in _PAD_INDEX:
        raise NotImplementedError(f"F.pad: unknown mode {mode!r}; expected 'constant', 'reflect', "
                                  "'replicate' or 'circular'")
    if value is not None and value != 0:
        raise ValueError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dims = len(pad) // 2
    if not 1 <= dims <= 3 or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(f"F.pad: mode {mode!r} pads the last 1 to 3 dims of an input with 1 "
                                  f"or 2 more dims (torch's rule); got {len(pad)} pad sizes for a "
                                  f"{input.ndim}-d input")
    out = input
    for k in range(dims):
        d = input.ndim - 1 - k
        lo, hi, size = int(pad[2 * k]), int(pad[2 * k + 1]), input.shape[d]
        if (lo, hi) != (0, 0):
            where = np.arange(-lo, size + hi)  # positions in the unpadded dim, outside it too
            out = I.index_select(out, d, T.to_tensor(_PAD_INDEX[mode](where, size, lo, hi, d)))
    return out


def _reflect_index(i, n, lo, hi, d):
    if max(lo, hi) >= n:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                           f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of size {n}")
    i = np.abs(i)  # mirrored about the first element, then about the last
    return np.where(i >= n, 2 * (n - 1) - i, i)


def _circular_index(i, n, lo, hi, d):
    start, kept = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)  # wraps what a negative size leaves
    if max(lo, hi) > kept:
        raise RuntimeError(f"Padding value causes wrapping around more than once: padding ({lo}, {hi}) "
                           f"at dimension {d} of size {n}")
    return start + (i - start) % kept


# the unpadded positions each padded position reads, per mode
_PAD_INDEX = {"reflect": _reflect_index, "circular": _circular_index,
              "replicate": lambda i, n, lo, hi, d: np.clip(i, 0, n - 1)}


def _pad_constant(input, pad, value):
    out = input
    for k in range(len(pad) // 2):
        d = input.ndim - 1 - k
        lo, hi = int(pad[2 * k]), int(pad[2 * k + 1])
        size = out.shape[d]
        if lo < 0 or hi < 0:  # crop first
            out = T.narrow(out, d, max(-lo, 0), size - max(-lo, 0) - max(-hi, 0))
            lo, hi = max(lo, 0), max(hi, 0)
        if lo or hi:
            parts = []
            shape = list(out.shape)
            fill = out.new_tensor(0 if value is None else value)  # (0-dim, on out's device)
            for n in (lo, hi):
                shape[d] = n
                parts.append(T.expand(fill, tuple(shape)))
            out = T.cat([parts[0], out, parts[1]], d)
    return out


# ----------------------------------------------------------------------------- embedding
def _normalized_dims(input, normalized_shape):
    """The trailing dims a layer/RMS norm reduces over, checked against ``normalized_shape``."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k > input.ndim or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size "
                           f"{list(input.shape)}")
    return tuple(range(input.ndim - k, input.ndim))


@named_backward("NativeLayerNormBackward0")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then scale/shift."""
    dims = _normalized_dims(input, normalized_shape)
    mu = T.mean(input, dims, keepdim=True)
    centered = T.sub(input, mu)
    var = T.mean(T.mul(centered, centered), dims, keepdim=True)
    out = T.mul(centered, T.rsqrt(T.add(var, eps)))
    if weight is not None:
        out = T.mul(out, weight)
    if bias is not None:
        out = T.add(out, bias)
    return out


@named_backward("EmbeddingBackward0")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at the integer ``input``; the ``padding_idx`` row gets no gradient."""
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding: max_norm and scale_grad_by_freq are not supported")
    if input.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following "
                           f"scalar types: Long, Int; but got {input.dtype} instead")
    idx = I.check_index(input.long(), weight.shape[0], 0, "select")  # (no negative index)
    out = I.INDEX(weight, idx, dim=0)
    if padding_idx is None:
        return out
    pad = padding_idx % weight.shape[0] if padding_idx < 0 else padding_idx
    # same values; the rows looked up at padding_idx come from a detached weight
    frozen = I.INDEX(weight.detach(), idx, dim=0)
    return T.where(T.unsqueeze(T.ne(idx, pad), -1), out, frozen)


@_on_inputs_device
def one_hot(tensor, num_classes=-1):
    if tensor.dtype is not _dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < 0:
        num_classes = int(T.amax(tensor).item()) + 1 if tensor.numel() else 0
    # (PyTorch's errors for a class below 0 or not below num_classes: eq would give zero rows)
    tensor = I.check_index(tensor, num_classes, 0, "one_hot")
    from ...core import creation

    return T.eq(T.unsqueeze(tensor, -1), creation.arange(num_classes)).long()


def _check_dropout_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


@_on_inputs_device
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``. The mask
    comes from the ``dropout_mask`` op seeded from ``tg.manual_seed``'s generator."""
    from ...core import creation

    _check_dropout_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = T.mul(input, 0.0)
    else:
        mask = N.DROPOUT_MASK(creation.seed_tensor(), shape=tuple(input.shape), p=float(p),
                              dtype=input.dtype if input.dtype.is_floating_point
                              else _dt.get_default_dtype())
        out = T.mul(input, mask)
    return _inplace_result(input, out, inplace)


# ----------------------------------------------------------------------------- convolution, pooling
def _pair(v, name):
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(a) for a in v)
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError(f"{name} must be an int or a pair of ints, got {v}")
    return v


def _batched(input, name):
    if input.ndim == 3:
        return T.unsqueeze(input, 0), True
    if input.ndim != 4:
        raise RuntimeError(f"{name}: Expected 3D (unbatched) or 4D (batched) input, but got input "
                           f"of size: {list(input.shape)}")
    return input, False


def _same_padding(kernel, dilation):
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple((t // 2, t - t // 2) for t in total)


@named_backward("ConvolutionBackward0")
@_amp.lower_precision
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation (PyTorch's conv2d) as unfold + one batched matmul per group.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.conv2d(tg.ones(1, 1, 3, 3), tg.ones(2, 1, 2, 2)).shape
    tracegrad.Size([1, 2, 2, 2])
    """
    x, unbatched = _batched(input, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    if c != cg * groups or o % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cg * groups} channels, but got {c} "
                           "channels instead")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0), (0, 0))
        elif padding == "same":
            if stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = _same_padding((kh, kw), dilation)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of 'valid', 'same'")
    else:
        ph, pw = _pair(padding, "padding")
        pads = ((ph, ph), (pw, pw))
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({x.dtype}) and weight type ({weight.dtype}) should be the same")
    cols = N.UNFOLD2D(x, kernel=(kh, kw), stride=stride, padding=pads, dilation=dilation)
    oh, ow = N._geometry(h, w, (kh, kw), stride, pads, dilation)
    cols = T.reshape(cols, (n, groups, cg * kh * kw, oh * ow))
    wmat = T.reshape(weight, (groups, o // groups, cg * kh * kw))
    out = T.reshape(T.matmul(wmat, cols), (n, o, oh, ow))
    if bias is not None:
        out = T.add(out, T.reshape(bias, (o, 1, 1)))
    return T.squeeze(out, 0) if unbatched else out


@_amp.lower_precision
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transpose (gradient) of conv2d, weight ``(C_in, C_out/groups, kH, kW)``: each input
    pixel's product with the weight (one product per group over the batch) summed into the
    output by ``fold``. Output size ``(H - 1)*stride - 2*padding + dilation*(k - 1) +
    output_padding + 1``.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.conv_transpose2d(tg.ones(1, 1, 2, 2), tg.ones(1, 1, 2, 2), stride=2).shape
    tracegrad.Size([1, 1, 4, 4])
    """
    x, unbatched = _batched(input, "conv_transpose2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    pads, out_pad = _pair(padding, "padding"), _pair(output_padding, "output_padding")
    n, c_in, h, w = x.shape
    wc_in, cg_out, kh, kw = weight.shape
    if wc_in != c_in or c_in % groups:
        raise RuntimeError(f"conv_transpose2d: weight of size {list(weight.shape)} expects {wc_in} input "
                           f"channels (divisible by groups={groups}), got input of size {list(x.shape)}")
    for op, s, d in zip(out_pad, stride, dilation):
        if op >= max(s, d):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={out_pad}, stride={stride}, dilation={dilation}")
    sizes = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
             for i, s, p, d, k, op in zip((h, w), stride, pads, dilation, (kh, kw), out_pad)]
    kk, cg_in = kh * kw, c_in // groups
    cols = T.matmul(T.transpose(T.reshape(weight, (groups, cg_in, cg_out * kk)), -2, -1),
                    T.reshape(x, (n, groups, cg_in, h * w)))
    cols = T.reshape(cols, (n, groups * cg_out * kk, h * w))
    # the image rows/cols past the end that output_padding adds beyond the last window's
    # reach (padding p - output_padding < 0) are zeros, padded on after the fold
    short = [max(op - p, 0) for op, p in zip(out_pad, pads)]
    out = N.FOLD2D(cols, output_size=(sizes[0] - short[0], sizes[1] - short[1]), kernel=(kh, kw),
                   stride=stride, dilation=dilation,
                   padding=((pads[0], pads[0] - out_pad[0] + short[0]),
                            (pads[1], pads[1] - out_pad[1] + short[1])))
    if any(short):
        out = pad(out, (0, short[1], 0, short[0]))
    if bias is not None:
        out = T.add(out, T.reshape(bias, (groups * cg_out, 1, 1)))
    return T.squeeze(out, 0) if unbatched else out


def _pool_geometry(size, k, s, p, d, ceil_mode):
    """Output length and the (lo, hi) padding that realises it (ceil mode pads the end)."""
    if p > (d * (k - 1) + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                           f"kernel_size={k} and dilation={d}")
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or the left padding
    if out <= 0:
        raise RuntimeError(f"Given input size {size}, kernel {k}, stride {s}, padding {p}: "
                           f"calculated output size {out} is too small")
    hi = max((out - 1) * s + d * (k - 1) + 1 - size - p, 0)
    return out, (p, hi)


def _pool_setup(input, kernel_size, stride, padding, dilation, ceil_mode, name):
    x, unbatched = _batched(input, name)
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    (oh, ph), (ow, pw) = (_pool_geometry(x.shape[2 + i], kernel[i], stride[i], padding[i],
                                         dilation[i], ceil_mode) for i in range(2))
    geo = dict(kernel=kernel, stride=stride, padding=(ph, pw), dilation=dilation)
    return x, unbatched, geo, (oh, ow)


@_on_inputs_device
@named_backward("MaxPool2DWithIndicesBackward0")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Max over windows. The gradient goes to one element per window (the first maximum), as
    in PyTorch; ``return_indices`` gives each maximum's flat position in its H*W plane."""
    x, unbatched, geo, (oh, ow) = _pool_setup(input, kernel_size, stride, padding, dilation,
                                              ceil_mode, "max_pool2d")
    n, c, h, w = x.shape
    kk = geo["kernel"][0] * geo["kernel"][1]
    # padding never wins the max: -inf, or an integer dtype's lowest value (it has no -inf)
    lowest = float("-inf") if x.dtype.is_floating_point else int(np.iinfo(x.dtype.np).min)
    cols = N.UNFOLD2D(x, pad_value=lowest, **geo)
    cols = T.reshape(cols, (n, c, kk, oh * ow))
    arg = T.argmax(cols, 2, keepdim=True)
    out = T.reshape(I.GATHER(cols, arg, dim=2), (n, c, oh, ow))
    if unbatched:
        out = T.squeeze(out, 0)
    if not return_indices:
        return out
    table = _window_positions(h, w, geo, (oh, ow))
    from ...core import creation

    positions = T.expand(creation.tensor(table), (n, c, kk, oh * ow))
    indices = T.reshape(I.GATHER(positions, arg, dim=2), (n, c, oh, ow))
    return out, (T.squeeze(indices, 0) if unbatched else indices)


def _window_positions(h, w, geo, out):
    """(kh*kw, oh*ow) int64: the flat input position each kernel offset of each window reads."""
    (kh, kw), (sh, sw), ((pt, _), (pl, _)), (dh, dw) = (geo["kernel"], geo["stride"],
                                                          geo["padding"], geo["dilation"])
    rows = (np.arange(out[0]) * sh - pt)[None, :, None] + (np.arange(kh) * dh)[:, None, None]
    cols = (np.arange(out[1]) * sw - pl)[None, None, :] + (np.arange(kw) * dw)[:, None, None]
    flat = rows[:, None, :, None] * w + cols[None, :, None, :]  # (kh, kw, oh, ow)
    return flat.reshape(kh * kw, out[0] * out[1]).astype(np.int64)


@_on_inputs_device
@named_backward("AvgPool2DBackward0")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows; the divisor follows PyTorch (padding counts unless
    ``count_include_pad=False``; windows cut off by ceil mode count only what they cover)."""
    x, unbatched, geo, (oh, ow) = _pool_setup(input, kernel_size, stride, padding, 1, ceil_mode,
                                              "avg_pool2d")
    n, c, h, w = x.shape
    kk = geo["kernel"][0] * geo["kernel"][1]
    cols = T.reshape(N.UNFOLD2D(x, **geo), (n, c, kk, oh * ow))
    total = T.reshape(T.sum(cols, 2), (n, c, oh, ow))
    if divisor_override:
        out = T.div(total, float(divisor_override))
    else:
        out = T.div(total, T.cast(_pool_counts(h, w, geo, count_include_pad), x.dtype))
    return T.squeeze(out, 0) if unbatched else out


def _pool_counts(h, w, geo, count_include_pad):
    """Per-window divisors, computed once from a plane of ones (a constant of the program)."""
    from ...core import creation

    (pt, pb), (pl, pr) = geo["padding"]
    p_h, p_w = pt, pl  # the symmetric padding the user asked for
    if count_include_pad:
        # ones over the input and its user padding; the extra ceil-mode padding counts 0
        bh, bw = min(pb, p_h), min(pr, p_w)  # user padding actually reached at the far end
        plane = np.ones((1, 1, h + p_h + bh, w + p_w + bw))
        pads = ((0, pb - bh), (0, pr - bw))
    else:
        plane, pads = np.ones((1, 1, h, w)), geo["padding"]
    cols = N._unfold_impl(plane, kernel=geo["kernel"], stride=geo["stride"], padding=pads,
                          dilation=geo["dilation"])
    oh, ow = N._geometry(h, w, geo["kernel"], geo["stride"], geo["padding"], geo["dilation"])
    return creation.tensor(cols.sum(1).reshape(oh, ow))


# ----------------------------------------------------------------------------- attention
@_amp.lower_precision
@_on_inputs_device
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False):
    """``softmax(q @ k^T * scale + mask) @ v`` over ``(..., L, E)`` queries and ``(..., S, E)``
    keys, as ``torch.nn.functional.scaled_dot_product_attention``: a bool ``attn_mask`` keeps
    the True positions, a float one is added; ``is_causal`` keeps the lower triangle;
    ``scale`` defaults to ``1 / sqrt(E)``; ``dropout_p`` zeroes attention weights (always, as
    PyTorch's: pass 0 in eval); ``enable_gqa`` shares each key/value head among
    ``(..., Hq, L, E) / (..., Hk, S, E)`` query heads."""
    if enable_gqa:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or value.shape[-3] != hk:
            raise RuntimeError(f"scaled_dot_product_attention: enable_gqa needs query heads ({hq}) a "
                               f"multiple of key heads ({hk}) and as many value heads "
                               f"({value.shape[-3]}) as key heads")
        from ..._api.composites import repeat_interleave

        key, value = (repeat_interleave(t, hq // hk, dim=-3) for t in (key, value))
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                           "is_causal=True")
    e = query.shape[-1]
    scores = T.mul(T.matmul(query, T.transpose(key, -2, -1)), 1.0 / math.sqrt(e) if scale is None else scale)
    if is_causal:
        from ..._api.composites import tril

        attn_mask = T.ne(tril(T.to_tensor(np.ones(tuple(scores.shape[-2:]), dtype=bool))), False)
    if attn_mask is not None:
        if attn_mask.dtype is _dt.bool_:
            scores = T.where(attn_mask, scores, float("-inf"))
        else:
            scores = T.add(scores, attn_mask)
    return T.matmul(dropout(softmax(scores, -1), dropout_p), value)


@named_backward("NativeGroupNormBackward0")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise each sample over groups of ``num_groups`` channels (and all spatial dims),
    biased variance, then a per-channel scale and shift."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but "
                           f"got input of shape {list(input.shape)} and num_groups={num_groups}")
    grouped = T.reshape(input, (n, num_groups, -1))
    mu = T.mean(grouped, 2, keepdim=True)
    centered = T.sub(grouped, mu)
    var = T.mean(T.mul(centered, centered), 2, keepdim=True)
    out = T.reshape(T.mul(centered, T.rsqrt(T.add(var, eps))), tuple(input.shape))
    shape = [1, c] + [1] * (input.ndim - 2)
    if weight is not None:
        out = T.mul(out, T.reshape(weight, shape))
    if bias is not None:
        out = T.add(out, T.reshape(bias, shape))
    return out


# ----------------------------------------------------------------------------- 1-D forms
def _one(v, name, fill):
    """A 1-D size (int or 1-tuple) as the pair (fill, v) of the 2-D op over a height of 1."""
    if isinstance(v, str):
        return v
    v = (v,) if isinstance(v, int) else tuple(v)
    if len(v) != 1:
        raise ValueError(f"{name} must be an int or a 1-tuple, got {v!r}")
    return (fill, v[0])


def _as_2d(input, name):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{name}: Expected 2D (unbatched) or 3D (batched) input, but got input "
                           f"of size: {list(input.shape)}")
    return T.unsqueeze(input, -2)


@named_backward("ConvolutionBackward0")
@_amp.lower_precision
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation over ``(N, C, L)``: conv2d over a height of 1."""
    out = conv2d(_as_2d(input, "conv1d"), T.unsqueeze(weight, -2), bias, _one(stride, "stride", 1),
                 _one(padding, "padding", 0), _one(dilation, "dilation", 1), groups)
    return T.squeeze(out, -2)


@_on_inputs_device
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    out = max_pool2d(_as_2d(input, "max_pool1d"), _one(kernel_size, "kernel_size", 1),
                     None if stride is None else _one(stride, "stride", 1), _one(padding, "padding", 0),
                     _one(dilation, "dilation", 1), ceil_mode, return_indices)
    if return_indices:
        return T.squeeze(out[0], -2), T.squeeze(out[1], -2)
    return T.squeeze(out, -2)


@_on_inputs_device
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    out = avg_pool2d(_as_2d(input, "avg_pool1d"), _one(kernel_size, "kernel_size", 1),
                     None if stride is None else _one(stride, "stride", 1), _one(padding, "padding", 0),
                     ceil_mode, count_include_pad)
    return T.squeeze(out, -2)


@_on_inputs_device
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's ``F.unfold`` (im2col): ``(N, C, H, W)`` to ``(N, C*kh*kw, L)``, or unbatched
    ``(C, H, W)`` to ``(C*kh*kw, L)``."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    x = T.unsqueeze(input, 0) if input.ndim == 3 else input
    ph, pw = _pair(padding, "padding")
    out = N.UNFOLD2D(x, kernel=_pair(kernel_size, "kernel_size"), stride=_pair(stride, "stride"),
                     padding=((ph, ph), (pw, pw)), dilation=_pair(dilation, "dilation"))
    return T.squeeze(out, 0) if input.ndim == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's ``F.fold`` (col2im, summing overlaps), the transpose of ``unfold``:
    ``(N, C*kh*kw, L)`` to ``(N, C, H, W)``, or unbatched ``(C*kh*kw, L)`` to ``(C, H, W)``."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                                  f"supported (got {input.ndim}D)")
    x = T.unsqueeze(input, 0) if input.ndim == 2 else input
    ph, pw = _pair(padding, "padding")
    out = N.FOLD2D(x, output_size=_pair(output_size, "output_size"),
                   kernel=_pair(kernel_size, "kernel_size"), stride=_pair(stride, "stride"),
                   padding=((ph, ph), (pw, pw)), dilation=_pair(dilation, "dilation"))
    return T.squeeze(out, 0) if input.ndim == 2 else out


from .activations_and_resampling import (relu6, selu, celu, hardswish, hardsigmoid, softmin, tanhshrink,
                                         softshrink, hardshrink, threshold, prelu, kl_div,
                                         adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                                         interpolate, upsample, upsample_nearest, upsample_bilinear,
                                         pixel_shuffle, pixel_unshuffle, dropout2d, dropout3d)
from .activations_and_resampling import __all__ as _more

__all__ += _more

from .losses import (margin_ranking_loss, hinge_embedding_loss, soft_margin_loss, cosine_embedding_loss,
                     pairwise_distance, triplet_margin_loss, gaussian_nll_loss, poisson_nll_loss,
                     multilabel_soft_margin_loss, instance_norm, multi_margin_loss, multilabel_margin_loss,
                     triplet_margin_with_distance_loss)
from .losses import __all__ as _losses

__all__ += _losses

from .pooling import (adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d,
                      adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
                      adaptive_max_pool3d_with_indices, max_pool1d_with_indices, max_pool2d_with_indices,
                      lp_pool1d, lp_pool2d, max_unpool1d, max_unpool2d, conv_transpose1d, conv3d, max_pool3d,
                      avg_pool3d, max_unpool3d, max_pool3d_with_indices, lp_pool3d)
from .pooling import __all__ as _pool

__all__ += _pool

from .grid import (affine_grid, grid_sample)
from .grid import __all__ as _grid

__all__ += _grid

from .norms_and_dropouts import (rms_norm, local_response_norm, bilinear, channel_shuffle,
                                 native_channel_shuffle, pdist, embedding_bag, dropout1d, alpha_dropout,
                                 feature_alpha_dropout, gumbel_softmax, rrelu, relu_, elu_, leaky_relu_,
                                 hardtanh_, selu_, celu_, threshold_, rrelu_)
from .norms_and_dropouts import __all__ as _extra

__all__ += _extra

from .ctc import (ctc_loss)
from .ctc import __all__ as _ctc

__all__ += _ctc

from .conv_transpose import (conv_transpose3d)
from .conv_transpose import __all__ as _conv_transpose

__all__ += _conv_transpose

from .attention import (multi_head_attention_forward)
from .attention import __all__ as _mha

__all__ += _mha

from .fractional_pooling import (fractional_max_pool2d, fractional_max_pool3d,
                                 fractional_max_pool2d_with_indices, fractional_max_pool3d_with_indices)
from .fractional_pooling import __all__ as _fractional

__all__ += _fractional

from .conv_tbc import (conv_tbc)
from .conv_tbc import __all__ as _conv_tbc

__all__ += _conv_tbc

from ..modules.linear_cross_entropy import linear_cross_entropy

__all__ += ["linear_cross_entropy"]
