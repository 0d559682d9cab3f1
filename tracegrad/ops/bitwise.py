"""Bitwise primitives on integer and bool tensors: ``bitwise_and``, ``bitwise_or``,
``bitwise_xor``, ``bitwise_left_shift``, ``bitwise_right_shift`` (``&``, ``|``, ``^``, ``<<``,
``>>``; on bools the first three are the logical operations). Not defined for floats, as in
PyTorch. ``bitwise_not`` is ``x ^ -1`` (``logical_not`` for bools), in tracegrad.functional.

>>> import tracegrad as tg
>>> tg.tensor([6, 5]) & tg.tensor([3, 1])
tensor([2, 1])
"""
from __future__ import annotations

import numpy as np

from .registry import defop
from .shapes import broadcast_shapes

_TORCH_NAME = {"bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
               "bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift"}


def _infer(name):
    def infer(a, b, **_):
        if a.dtype is not b.dtype:
            raise TypeError(f"{name} primitive expects equal dtypes, got {a.dtype} and {b.dtype}")
        if a.dtype.is_floating_point or (a.dtype.np.kind == "b" and "shift" in name):
            kind = {"float32": "Float", "float64": "Double", "bool": "Bool"}[a.dtype.name]
            raise RuntimeError(f"\"{_TORCH_NAME[name]}_cpu\" not implemented for '{kind}'")
        return broadcast_shapes(a.shape, b.shape), a.dtype

    return infer


def _samples(high):
    return lambda: [((("index", (3, 4), 64), ("index", (3, 4), high)), {}),
                    ((("index", (3, 1), 64), ("index", (4,), high)), {})]


def _op(name, fn, c, high=64):
    return defop(name, infer=_infer(name), impl=lambda a, b: fn(a, b).astype(a.dtype, copy=False), c=c,
                 kind="elementwise", differentiable=False, sample=_samples(high))


BITWISE_AND = _op("bitwise_and", np.bitwise_and, "({0} & {1})")
BITWISE_OR = _op("bitwise_or", np.bitwise_or, "({0} | {1})")
BITWISE_XOR = _op("bitwise_xor", np.bitwise_xor, "({0} ^ {1})")
# (shifts by 0 .. 7 in the samples: beyond the width C leaves the result undefined)
BITWISE_LEFT_SHIFT = _op("bitwise_left_shift", np.left_shift, "({0} << {1})", high=8)
BITWISE_RIGHT_SHIFT = _op("bitwise_right_shift", np.right_shift, "({0} >> {1})", high=8)
