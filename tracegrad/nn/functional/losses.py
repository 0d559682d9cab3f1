"""More of ``torch.nn.functional``'s losses and distances, re-exported by
``tracegrad.nn.functional``: margin ranking, hinge embedding, soft margin, cosine embedding,
triplet margin (also with any distance), Gaussian and Poisson negative log-likelihoods,
multilabel soft margin, the multi-class and multilabel margins, ``pairwise_distance`` and
``instance_norm``. Each follows PyTorch's formula term by term, so
values and gradients agree with its kernels (its epsilons included).

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.margin_ranking_loss(tg.tensor([1.0, 2.0]), tg.tensor([2.0, 1.0]), tg.tensor([1.0, 1.0]))
tensor(0.5000)
"""
from __future__ import annotations

import math

from ...core.placement import on_inputs_device as _on_inputs_device
from ... import amp as _amp
from ..._api import functional as T
from ..._api.composites import norm

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss", "cosine_embedding_loss",
           "pairwise_distance", "triplet_margin_loss", "gaussian_nll_loss", "poisson_nll_loss",
           "multilabel_soft_margin_loss", "instance_norm", "multi_margin_loss", "multilabel_margin_loss",
           "triplet_margin_with_distance_loss"]


def _reduce(loss, reduction):
    from . import _reduce as reduce_

    return reduce_(loss, reduction)


def _legacy(size_average, reduce, reduction):
    from . import _legacy_reduction

    return _legacy_reduction(size_average, reduce, reduction)


@_amp.float32
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy(size_average, reduce, reduction)
    return _reduce(T.clamp(T.add(T.mul(T.neg(target), T.sub(input1, input2)), margin), min=0.0), reduction)


@_amp.float32
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where target is 1, ``max(0, margin - input)`` where it is -1."""
    reduction = _legacy(size_average, reduce, reduction)
    zero = T.mul(input, 0.0)
    margin_part = T.where(T.ne(target, 1), T.clamp(T.sub(margin, input), min=0.0), zero)
    self_part = T.where(T.ne(target, -1), input, zero)
    return _reduce(T.add(margin_part, self_part), reduction)


@_amp.float32
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _legacy(size_average, reduce, reduction)
    return _reduce(T.log1p(T.exp(T.mul(T.neg(target), input))), reduction)


@_amp.float32
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos`` where target is 1, ``max(0, cos - margin)`` where it is -1 (cosine along the
    last dim, with PyTorch's 1e-12 added to each squared norm)."""
    reduction = _legacy(size_average, reduce, reduction)
    eps = 1e-12
    dim = input1.ndim - 1
    dot = T.sum(T.mul(input1, input2), dim)
    mag1 = T.add(T.sum(T.mul(input1, input1), dim), eps)
    mag2 = T.add(T.sum(T.mul(input2, input2), dim), eps)
    cos = T.div(dot, T.sqrt(T.mul(mag1, mag2)))
    zero = T.mul(cos, 0.0)
    pos = T.where(T.eq(target, 1), T.sub(1.0, cos), zero)
    neg = T.where(T.eq(target, -1), T.clamp(T.sub(cos, margin), min=0.0), zero)
    return _reduce(T.add(pos, neg), reduction)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` along the last dim."""
    return norm(T.add(T.sub(x1, x2), eps), p, -1, keepdim)


@_amp.float32
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with pairwise distances;
    ``swap`` uses ``min(d(a, n), d(p, n))``."""
    reduction = _legacy(size_average, reduce, reduction)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = T.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(T.clamp(T.add(T.sub(d_pos, d_neg), margin), min=0.0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)^2 / var)`` (plus ``0.5 log(2 pi)`` with ``full``);
    ``var`` is clamped below at ``eps`` without stopping its gradient, as PyTorch does. A
    negative ``var`` raises eagerly; a compiled function gives NaN (the check would read data)."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = T.unsqueeze(var, -1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if not var._is_traced and (var.detach() < 0).any().item():  # (a compiled call: NaN instead)
        raise ValueError("var has negative entry/entries")
    var = T.add(var, T.sub(T.clamp(var, min=eps), var).detach())  # clamped value, identity gradient
    loss = T.mul(T.add(T.log(var), T.div(T.square(T.sub(input, target)), var)), 0.5)
    if full:
        loss = T.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


@_amp.float32
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``;
    ``full`` adds Stirling's approximation of ``log(target!)`` where target > 1."""
    reduction = _legacy(size_average, reduce, reduction)
    if log_input:
        loss = T.sub(T.exp(input), T.mul(target, input))
    else:
        loss = T.sub(input, T.mul(target, T.log(T.add(input, eps))))
    if full:
        safe = T.where(T.gt(target, 1), target, 1.0)
        stirling = T.add(T.sub(T.mul(safe, T.log(safe)), safe), T.mul(T.log(T.mul(safe, 2 * math.pi)), 0.5))
        loss = T.add(loss, T.where(T.gt(target, 1), stirling, 0.0))
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` averaged over the classes (the last
    dim), then reduced over the batch."""
    reduction = _legacy(size_average, reduce, reduction)
    from . import logsigmoid

    loss = T.neg(T.add(T.mul(target, logsigmoid(input)), T.mul(T.sub(1.0, target), logsigmoid(T.neg(input)))))
    if weight is not None:
        loss = T.mul(loss, weight)
    return _reduce(T.mean(loss, input.ndim - 1), reduction)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Each channel of each sample normalised over its spatial dims (biased variance), then
    an optional per-channel scale and shift. With running statistics: ``use_input_stats``
    normalises by the sample's own and moves ``running_mean``/``running_var`` (in place) by
    ``momentum`` toward their batch averages (unbiased variance), as PyTorch's; otherwise the
    running ones normalise."""
    from ...autograd.grad_mode import no_grad
    from . import group_norm

    c = input.shape[1]
    shape = [1, c] + [1] * (input.ndim - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        out = T.mul(T.sub(input, T.reshape(running_mean, shape)),
                    T.rsqrt(T.add(T.reshape(running_var, shape), eps)))
        if weight is not None:
            out = T.mul(out, T.reshape(weight, shape))
        return T.add(out, T.reshape(bias, shape)) if bias is not None else out
    if running_mean is not None or running_var is not None:
        with no_grad():
            per = T.reshape(input.detach(), (input.shape[0], c, -1))
            n = per.shape[2]
            mean = T.mean(per, 2)
            var = T.sum(T.square(T.sub(per, T.unsqueeze(mean, 2))), 2) / max(n - 1, 1)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(T.mean(mean, 0) * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(T.mean(var, 0) * momentum)
    return group_norm(input, c, weight, bias, eps)


def _hinge(z):
    """``max(0, z)`` with no gradient at 0 (PyTorch's margin kernels test ``z > 0``)."""
    return T.where(T.gt(z, 0), z, T.mul(z, 0.0))


def _batched_classes(input, target, name):
    if input.ndim not in (1, 2) or (input.ndim == 2 and input.shape[0] == 0):
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {list(input.shape)}")
    if input.ndim == 1:
        return T.unsqueeze(input, 0), T.reshape(target, (1, -1)), True
    return input, target, False


@_amp.float32
@_on_inputs_device
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """``sum over i != y of max(0, margin - x[y] + x[i])^p / C`` per sample (``p`` 1 or 2),
    each term scaled by ``weight[y]``."""
    reduction = _legacy(size_average, reduce, reduction)
    from ...core.creation import arange
    from ...ops import index as I

    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, y, unbatched = _batched_classes(input, target, "multi_margin_loss")
    n, c = x.shape
    y = T.reshape(y, (n, 1))
    h = _hinge(T.add(T.sub(x, I.GATHER(x, y, dim=1)), margin))  # (N, C)
    if p == 2:
        h = T.mul(h, h)
    if weight is not None:
        h = T.mul(h, I.INDEX(weight, y, dim=0))
    h = T.where(T.ne(arange(c), y), h, T.mul(h, 0.0))  # not the target class itself
    loss = T.div(T.sum(h, 1), float(c))
    return _reduce(T.squeeze(loss, 0) if unbatched else loss, reduction)


@_on_inputs_device
@_amp.float32
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C`` per sample;
    ``target`` holds class indices, ended by the first -1."""
    reduction = _legacy(size_average, reduce, reduction)
    from ...core.creation import arange
    from ...ops import index as I

    x, y, unbatched = _batched_classes(input, target, "multilabel_margin_loss")
    if tuple(y.shape) != tuple(x.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for "
                           f"input of size: {list(input.shape)}")
    n, c = x.shape
    listed = T.eq(T.cumsum(T.cast(T.eq(y, -1), x.dtype), 1), 0)  # (N, C): before the first -1
    safe = T.where(listed, y, 0)
    is_target = T.amax(T.logical_and(T.unsqueeze(listed, -1),
                                     T.eq(T.unsqueeze(safe, -1), arange(c))), 1)  # (N, C)
    x_target = I.GATHER(x, safe, dim=1)  # (N, J)
    h = _hinge(T.add(T.sub(T.unsqueeze(x, 1), T.unsqueeze(x_target, -1)), 1.0))  # (N, J, C)
    keep = T.logical_and(T.unsqueeze(listed, -1), T.unsqueeze(T.logical_not(is_target), 1))
    h = T.where(keep, h, T.mul(h, 0.0))
    loss = T.div(T.sum(h, (1, 2)), float(c))
    return _reduce(T.squeeze(loss, 0) if unbatched else loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for any distance
    ``d`` (``pairwise_distance`` by default); ``swap`` uses ``min(d(a, n), d(p, n))``."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got "
                         f"{margin} instead")
    d = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = T.minimum(d_neg, d(positive, negative))
    return _reduce(T.clamp(T.add(T.sub(d_pos, d_neg), margin), min=0.0), reduction)
