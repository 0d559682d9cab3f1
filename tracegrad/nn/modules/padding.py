"""Padding modules (PyTorch's ``nn.ZeroPad2d``, ``nn.ReflectionPad1d``, ...): each calls
``F.pad`` with its mode on the last 1, 2 or 3 dims.

>>> import tracegrad as tg
>>> tg.nn.ReplicationPad1d((2, 1))(tg.tensor([[[1.0, 2.0]]]))
tensor([[[1., 1., 1., 2., 2.]]])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _PadNd(Module):
    """Pads the last ``dims`` dims; ``padding`` an int (every side) or (left, right, top,
    bottom, front, back) as far as ``dims`` goes."""

    mode = "constant"
    dims = 1

    def __init__(self, padding):
        self._setup(padding, None)

    def _setup(self, padding, value):
        Module.__init__(self)
        sides = 2 * self.dims
        if isinstance(padding, int):
            padding = (padding,) * sides
        padding = tuple(padding)
        if len(padding) != sides or not all(isinstance(p, int) for p in padding):
            raise ValueError(f"{type(self).__name__}: padding must be an int or {sides} ints, got {padding!r}")
        self.padding, self.value = padding, value

    def forward(self, input):
        return F.pad(input, self.padding, mode=self.mode, value=self.value)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        self._setup(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_PadNd):
    def __init__(self, padding):
        self._setup(padding, 0.0)


def _pad_classes(base, mode, prefix):
    return [type(f"{prefix}{d}d", (base,), {"mode": mode, "dims": d, "__module__": __name__,
                                             "__doc__": f"``F.pad`` of the last {d} dim(s), mode {mode!r}."})
            for d in (1, 2, 3)]


ZeroPad1d, ZeroPad2d, ZeroPad3d = _pad_classes(_ZeroPadNd, "constant", "ZeroPad")
ConstantPad1d, ConstantPad2d, ConstantPad3d = _pad_classes(_ConstantPadNd, "constant", "ConstantPad")
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = _pad_classes(_PadNd, "reflect", "ReflectionPad")
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = _pad_classes(_PadNd, "replicate", "ReplicationPad")
CircularPad1d, CircularPad2d, CircularPad3d = _pad_classes(_PadNd, "circular", "CircularPad")

PADDING_MODULES = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
                   "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
                   "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
                   "CircularPad2d", "CircularPad3d"]
