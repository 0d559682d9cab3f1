"""Folding an eval-mode batch norm into the convolution or linear layer before it (PyTorch's
``torch.nn.utils.fusion``): one layer computing ``bn(conv(x))``.

>>> import tracegrad as tg
>>> conv, bn = tg.nn.Conv2d(2, 3, 3).eval(), tg.nn.BatchNorm2d(3).eval()
>>> fused = tg.nn.utils.fuse_conv_bn_eval(conv, bn)
>>> x = tg.randn(1, 2, 5, 5)
>>> bool(tg.allclose(fused(x), bn(conv(x)), atol=1e-6))
True
"""
from __future__ import annotations

import copy

from ...core import creation
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` whose weight and bias include ``bn`` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The (weight, bias) Parameters of a convolution followed by a batch norm with these
    statistics and affine parameters (output channels first, or second when ``transpose``)."""
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    return _fused(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, shape)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias include ``bn`` (both in eval mode; the norm's
    features equal to the layer's outputs, or 1)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The (weight, bias) Parameters of a linear layer followed by a batch norm."""
    return _fused(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, [-1, 1])


def _fused(w, b, rm, rv, eps, bn_w, bn_b, shape):
    """``w * scale`` (``scale = bn_w / sqrt(rv + eps)`` laid out by ``shape``) and
    ``(b - rm) * scale + bn_b``, as Parameters in the layer's dtypes."""
    w_dtype = w.dtype
    b_dtype = b.dtype if b is not None else w_dtype
    b = creation.zeros_like(rm) if b is None else b
    bn_w = creation.ones_like(rm) if bn_w is None else bn_w
    bn_b = creation.zeros_like(rm) if bn_b is None else bn_b
    scale = bn_w * (rv + eps).rsqrt()
    fused_w = (w * scale.reshape(shape)).to(w_dtype)
    fused_b = ((b - rm) * (rv + eps).rsqrt() * bn_w + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), w.requires_grad), Parameter(fused_b.detach(), b.requires_grad)
