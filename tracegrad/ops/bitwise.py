"""Bitwise primitives on integer and bool tensors: ``bitwise_and``, ``bitwise_or``,
``bitwise_xor``, ``bitwise_left_shift``, ``bitwise_right_shift`` (``&``, ``|``, ``^``, ``<<``,
``>>``; on bools the first three are the logical operations). Not defined for floats, as in
PyTorch. ``bitwise_not`` is ``x ^ -1`` (``logical_not`` for bools), in tracegrad._api.functional.
Also the integers' ``gcd`` and ``lcm`` (not defined for bools or floats).

>>> import tracegrad as tg
>>> tg.tensor([6, 5]) & tg.tensor([3, 1])
tensor([2, 1])
"""
from __future__ import annotations

import numpy as np

from .registry import defop
from .shapes import broadcast_shapes

_TORCH_NAME = {"bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
               "bitwise_left_shift": "lshift", "bitwise_right_shift": "rshift", "gcd": "gcd", "lcm": "lcm"}


def _infer(name):
    def infer(a, b, **_):
        if a.dtype is not b.dtype:
            raise TypeError(f"{name} primitive expects equal dtypes, got {a.dtype} and {b.dtype}")
        if a.dtype.is_floating_point or (a.dtype.np.kind == "b" and name not in _ON_BOOLS):
            raise RuntimeError(f"\"{_TORCH_NAME[name]}_cpu\" not implemented for '{a.dtype.torch_name}'")
        return broadcast_shapes(a.shape, b.shape), a.dtype

    return infer


_ON_BOOLS = ("bitwise_and", "bitwise_or", "bitwise_xor")


def _samples():
    return [((("index", (3, 4), 64), ("index", (3, 4), 64)), {}),
            ((("index", (3, 1), 64), ("index", (4,), 64)), {})]


def _signed_samples():
    """negative values and zeros (gcd, lcm); as shifts: negative amounts and amounts past the
    width (int64: 64 and more)"""
    return [((("signed_int", (3, 4)), ("signed_int", (3, 4))), {}),
            ((("signed_int", (3, 1)), ("index", (4,), 70)), {})]


def _op(name, fn, c, sample=_samples):
    return defop(name, infer=_infer(name), impl=lambda a, b: fn(a, b).astype(a.dtype, copy=False), c=c,
                 kind="elementwise", differentiable=False, sample=sample)


BITWISE_AND = _op("bitwise_and", np.bitwise_and, "({0} & {1})")
BITWISE_OR = _op("bitwise_or", np.bitwise_or, "({0} | {1})")
BITWISE_XOR = _op("bitwise_xor", np.bitwise_xor, "({0} ^ {1})")
# PyTorch's and NumPy's shifts are defined for every amount: a negative one or one of the width
# or more shifts everything out (0; a right shift keeps the sign: -1 for a negative value),
# where C's shifts are undefined. The left shift goes through uint64_t: shifting a negative
# signed value left is undefined in C too; the cast back wraps, as PyTorch's result does.
_OUT_OF_RANGE = "(({1}) < 0 || ({1}) >= (int)(8 * sizeof({ctype})))"
BITWISE_LEFT_SHIFT = _op("bitwise_left_shift", np.left_shift,
                         f"({_OUT_OF_RANGE} ? ({{ctype}})0 : ({{ctype}})((uint64_t)({{0}}) << ({{1}})))",
                         sample=_signed_samples)
BITWISE_RIGHT_SHIFT = _op("bitwise_right_shift", np.right_shift,
                          f"({_OUT_OF_RANGE} ? ({{ctype}})(({{0}}) < 0 ? -1 : 0) : ({{ctype}})(({{0}}) >> ({{1}})))",
                          sample=_signed_samples)

# gcd and lcm as PyTorch's (runtime.h.j2 tg_gcd, tg_lcm): gcd(0, 0) is 0, both are >= 0 but for
# the wrapped |INT_MIN|, and lcm wraps in the dtype
GCD = _op("gcd", np.gcd, "({ctype})tg_gcd({0}, {1})", sample=_signed_samples)
LCM = _op("lcm", np.lcm, "({ctype})tg_lcm({0}, {1})", sample=_signed_samples)
