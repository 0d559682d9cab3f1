"""``conv_transpose3d`` (PyTorch's ``F.conv_transpose3d``), re-exported by
``tracegrad.nn.functional``: made of ``conv_transpose2d`` as ``conv3d`` is made of ``conv2d``.

Each kernel depth z takes every input depth plane through ``conv_transpose2d`` at once (the
planes stacked into the batch); input depth i then lands on output depth ``i*stride - padding +
z*dilation``: the planes are spread ``stride`` apart, shifted there (padded, or cropped by the
padding) and the kernel depths' contributions summed.

>>> import tracegrad as tg
>>> import tracegrad.nn.functional as F
>>> F.conv_transpose3d(tg.ones(1, 1, 2, 2, 2), tg.ones(1, 1, 2, 2, 2), stride=2).shape
tracegrad.Size([1, 1, 4, 4, 4])
"""
from __future__ import annotations

from ... import amp as _amp
from ...core import creation
from ..._api import functional as T

__all__ = ["conv_transpose3d"]


@_amp.lower_precision
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The transpose of conv3d over ``(N, C_in, D, H, W)`` (or unbatched ``(C_in, D, H, W)``),
    weight ``(C_in, C_out/groups, kD, kH, kW)``. Output size per spatial dim ``(in - 1)*stride
    - 2*padding + dilation*(k - 1) + output_padding + 1``.

    >>> import tracegrad as tg
    >>> import tracegrad.nn.functional as F
    >>> F.conv_transpose3d(tg.ones(1, 1, 1, 1, 2), tg.ones(1, 1, 2, 1, 2)).flatten()
    tensor([1., 2., 1., 1., 2., 1.])
    """
    from ..modules.conv import _ntuple
    from . import conv_transpose2d, pad

    if input.ndim not in (4, 5):
        raise RuntimeError(f"conv_transpose3d: Expected 4D (unbatched) or 5D (batched) input, but got input "
                           f"of size: {list(input.shape)}")
    x = T.unsqueeze(input, 0) if input.ndim == 4 else input
    stride, padding = _ntuple(stride, 3, "stride"), _ntuple(padding, 3, "padding")
    output_padding, dilation = _ntuple(output_padding, 3, "output_padding"), _ntuple(dilation, 3, "dilation")
    n, c_in, depth = x.shape[:3]
    if weight.ndim != 5 or weight.shape[0] != c_in or c_in % groups:
        raise RuntimeError(f"conv_transpose3d: weight of size {list(weight.shape)} expects its first size to be "
                           f"the input channels (divisible by groups={groups}), got input of size "
                           f"{list(input.shape)}")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= max(s, d):
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    kd, sd, pd, dd = weight.shape[2], stride[0], padding[0], dilation[0]
    out_depth = (depth - 1) * sd - 2 * pd + dd * (kd - 1) + output_padding[0] + 1
    if out_depth <= 0:
        raise RuntimeError(f"conv_transpose3d: the output depth {out_depth} is not positive (input depth {depth}, "
                           f"stride {sd}, padding {pd}, kernel depth {kd}, dilation {dd})")
    planes = T.reshape(T.permute(x, (0, 2, 1, 3, 4)), (n * depth, c_in) + tuple(x.shape[3:]))
    out, spread = 0, (depth - 1) * sd + 1
    for z in range(kd):
        y = conv_transpose2d(planes, weight[:, :, z], None, stride[1:], padding[1:], output_padding[1:], groups,
                             dilation[1:])
        y = _spread(T.reshape(y, (n, depth) + tuple(y.shape[1:])), sd)  # (N, spread, C_out, H, W)
        # input depth 0 lands on output depth `first`; what falls in the padding is cut away
        # (all of it, with a padding wider than the input's reach)
        first = z * dd - pd
        keep_from = min(max(-first, 0), spread)
        keep_to = max(min(out_depth - first, spread), keep_from)
        before = min(max(first, 0), out_depth)
        y = pad(y[:, keep_from:keep_to], (0, 0) * 3 + (before, out_depth - before - (keep_to - keep_from)))
        out = T.add(out, y)
    out = T.permute(out, (0, 2, 1, 3, 4))
    if bias is not None:
        out = T.add(out, T.reshape(bias, (-1, 1, 1, 1)))
    return T.squeeze(out, 0) if input.ndim == 4 else out


def _spread(y, stride):
    """``y`` ``(N, D, ...)`` with ``stride - 1`` zero planes after each depth but the last."""
    if stride == 1:
        return y
    zeros = creation.zeros_like(y)
    y = T.stack([y] + [zeros] * (stride - 1), 2)
    y = T.reshape(y, (y.shape[0], y.shape[1] * stride) + tuple(y.shape[3:]))
    return y[:, :y.shape[1] - stride + 1]

