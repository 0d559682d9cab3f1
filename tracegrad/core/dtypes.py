"""dtypes and PyTorch's type-promotion rules.

>>> import tracegrad as tg
>>> tg.float32, tg.result_type(tg.ones(2, dtype=tg.int64), 1.5)
(tracegrad.float32, tracegrad.float32)
"""
from __future__ import annotations

import ml_dtypes
import numpy as np


class DType:
    """A tensor element type. Instances are singletons compared by identity."""

    __slots__ = ("name", "np", "short", "category", "itemsize", "c_type", "torch_name")

    def __init__(self, name, np_dtype, short, category, c_type, torch_name):
        self.name = name
        self.torch_name = torch_name  # PyTorch's ScalarType name, which its messages print: "Float"
        self.np = np.dtype(np_dtype)
        self.short = short  # the IR spelling: f64, f32, f16, i64, i32, i16, i8, u8, b8
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.itemsize = self.np.itemsize
        self.c_type = c_type

    @property
    def is_floating_point(self):
        return self.category == 2

    def __repr__(self):
        return f"tracegrad.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = DType("bool", np.bool_, "b8", 0, "uint8_t", "Bool")
uint8 = DType("uint8", np.uint8, "u8", 1, "uint8_t", "Byte")
int8 = DType("int8", np.int8, "i8", 1, "int8_t", "Char")
int16 = DType("int16", np.int16, "i16", 1, "int16_t", "Short")
int32 = DType("int32", np.int32, "i32", 1, "int32_t", "Int")
int64 = DType("int64", np.int64, "i64", 1, "int64_t", "Long")
float16 = DType("float16", np.float16, "f16", 2, "_Float16", "Half")
# NumPy has no bfloat16: ml_dtypes (the JAX project's) gives it one. Ops compute it in float32
# and round their results (widen_bfloat16), as PyTorch's CPU kernels do; in C its bits are a
# uint16_t (backends/c/half.py)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, "bf16", 2, "uint16_t", "BFloat16")
float32 = DType("float32", np.float32, "f32", 2, "float", "Float")
float64 = DType("float64", np.float64, "f64", 2, "double", "Double")

ALL = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool_)
FLOATING = (float16, bfloat16, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# PyTorch's lattice; uint8 and int8 share a rank, as do float16 and bfloat16: neither of a pair
# holds the other, and together they promote to int16, float32 (promote)
_ORDER = {bool_: 0, uint8: 1, int8: 1, int16: 2, int32: 3, int64: 4, float16: 5, bfloat16: 5, float32: 6,
          float64: 7}
_PAIR_PROMOTION = {1: int16, 5: float32}

_default_float = float32


def _by_name(name):
    return _BY_NAME[name]


_BF16_NP = bfloat16.np


def widen_bfloat16(arrays):
    """``arrays`` with each bfloat16 one as float32: what an op's NumPy kernel computes on (its
    result is rounded back by the caller, to the op's dtype)."""
    return [a.astype(np.float32) if getattr(a, "dtype", None) == _BF16_NP else a for a in arrays]


def convert_ints(values, dtype, what):
    """Python ints (an int or a list) converted to the integer ``dtype`` as PyTorch converts
    them (c10's ``overflows``): within the dtype's range, or for an unsigned dtype down to -max,
    wrapping (-1 is 255 as a uint8); beyond, a RuntimeError naming ``what`` (PyTorch's C++ type
    name in an op's scalar argument, the dtype's name in tensor creation)."""
    wide = np.asarray(values, dtype=np.int64)  # (beyond int64 NumPy raises OverflowError, as PyTorch does)
    info = np.iinfo(dtype.np)
    low = -int(info.max) if info.min == 0 else int(info.min)
    if wide.size and (wide.min() < low or wide.max() > info.max):
        raise RuntimeError(f"value cannot be converted to type {what} without overflow")
    return wide.astype(dtype.np)


def check_can_cast(result, into):
    """PyTorch's rule for writing a ``result`` dtype into an existing tensor's (in-place ops,
    ``out=``): not into a lower category (float into an integer tensor, integer into bool)."""
    if result.category > into.category:
        raise RuntimeError(f"result type {result.torch_name} can't be cast to the desired output type "
                           f"{into.torch_name}")


def get_default_dtype():
    return _default_float


def set_default_dtype(d):
    global _default_float
    if d not in FLOATING:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float = d


def from_numpy_dtype(npd) -> DType:
    """Map a NumPy dtype to a tracegrad dtype (others, such as complex, are rejected by name)."""
    npd = np.dtype(npd)
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(
            f"can't convert np.ndarray of type {npd}: the supported types are "
            "float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8 and bool"
        )
    return d


def to_dtype(d) -> DType:
    """Accept a DType, a NumPy dtype, a Python type or a name such as 'float32'."""
    if isinstance(d, DType):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        return from_numpy_dtype(d)
    except TypeError:
        raise TypeError(f"expected a tracegrad dtype, got {d!r}") from None


def promote(a: DType, b: DType) -> DType:
    """The larger of two dtypes in PyTorch's lattice bool < uint8, int8 < int16 < int32 < int64
    < float16, bfloat16 < float32 < float64, where uint8 with int8 is int16 and float16 with
    bfloat16 is float32.

    >>> promote(uint8, int8), promote(uint8, int32), promote(bool_, uint8)
    (tracegrad.int16, tracegrad.int32, tracegrad.uint8)
    """
    if a is not b and _ORDER[a] == _ORDER[b]:
        return _PAIR_PROMOTION[_ORDER[a]]
    return a if _ORDER[a] >= _ORDER[b] else b


def scalar_category(x) -> int:
    if isinstance(x, (bool, np.bool_)):
        return 0
    if isinstance(x, (int, np.integer)):
        return 1
    return 2


def category_default(cat: int) -> DType:
    return (bool_, int64, get_default_dtype())[cat]


_Tensor = None


def result_type(*args) -> DType:
    """PyTorch's promotion: tensors with dims > 0 first, then 0-dim tensors, then Python scalars.

    A lower-priority participant only changes the result when it is of a higher category
    (bool < integer < floating), in which case the category's default dtype is used
    (for 0-dim tensors: their own dtype).
    """
    global _Tensor
    if _Tensor is None:  # (tensor.py imports this module: bound on first use, not per call)
        from .tensor import Tensor as _Tensor
    Tensor = _Tensor
    if len(args) == 2:  # the usual call, a binary op: answered without building the lists below
        a, b = args
        if isinstance(a, Tensor):
            if isinstance(b, Tensor):
                if a._dtype is b._dtype:
                    return a._dtype
            elif scalar_category(b) <= a._dtype.category:
                return a._dtype  # a scalar of the tensor's category or lower never changes it
    dims = [a.dtype for a in args if isinstance(a, Tensor) and a.ndim > 0]
    zero = [a.dtype for a in args if isinstance(a, Tensor) and a.ndim == 0]
    scalars = [scalar_category(a) for a in args if not isinstance(a, Tensor)]
    result = None
    for d in dims:
        result = d if result is None else promote(result, d)
    for d in zero:
        if result is None:
            result = d
        elif d.category > result.category:
            result = d
        elif d.category == result.category and not dims:
            result = promote(result, d)
    for c in scalars:
        if result is None:
            result = category_default(c)
        elif c > result.category:
            result = category_default(c)
    return result if result is not None else get_default_dtype()


class finfo:
    """The limits of a floating dtype (``torch.finfo``): ``bits eps max min tiny
    smallest_normal resolution dtype``.

    >>> import tracegrad as tg
    >>> tg.finfo(tg.float32).eps
    1.1920928955078125e-07
    """

    def __init__(self, type=None):
        dtype = get_default_dtype() if type is None else to_dtype(type)
        if not dtype.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to "
                            f"handle '{dtype.name}'")
        info = ml_dtypes.finfo(dtype.np) if dtype is bfloat16 else np.finfo(dtype.np)
        self.bits, self.dtype = info.bits, dtype.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.tiny)
        self.resolution = 10.0 ** -info.precision

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype (``torch.iinfo``): ``bits max min dtype``."""

    def __init__(self, type):
        dtype = to_dtype(type)
        if dtype.is_floating_point or dtype.np.kind == "b":
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            f"'{dtype.name}'")
        info = np.iinfo(dtype.np)
        self.bits, self.max, self.min, self.dtype = info.bits, int(info.max), int(info.min), dtype.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
