"""Tensor's methods of conversion and description: dtype and device conversion (``to``,
``float``, ``long``, ``type_as``, ``cpu``...), new tensors of this one's dtype (``new_zeros``...),
the questions PyTorch's code asks (``is_contiguous``, ``is_cuda``, ``nbytes``...), and the
complex API's answers for real dtypes (``conj``, ``real``, ``mH``).

>>> import tracegrad as tg
>>> x = tg.tensor([1, 2])
>>> x.float(), x.is_cuda, x.new_ones(2).dtype
(tensor([1., 2.]), False, tracegrad.int64)
"""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, NoReturn

from . import functional as F
from ..core import creation
from ..core import device as _device
from ..core import dtypes as _dt
from ..core import placement

if TYPE_CHECKING:
    from ..core.random import Generator
    from .tensor import Tensor


class ConversionMethods:
    """The conversion and description methods of ``tracegrad.Tensor`` (it lists this mixin)."""

    # (annotations name ``builtins.bool``/``int``: in this class ``bool`` and ``int`` are methods)

    def to(self, *args, dtype=None, device=None, non_blocking: builtins.bool = False, copy: builtins.bool = False,
           memory_format=None) -> Tensor:
        """PyTorch's ``Tensor.to``: ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (its dtype
        and device), with ``copy=True`` for a new tensor even when nothing changes. A device
        other than the CPU and cuda (where available: core/placement.py) raises (core/device.py).

        >>> import tracegrad as tg
        >>> tg.tensor([1.5, 2.5]).to(tg.int64)
        tensor([1, 2])
        """
        dtype, dev = _device.to_arguments(args, dtype, device)
        if dev is not None and dev != self.device:
            moved = placement.move(self, dev)
            return moved if dtype is None else moved.to(dtype)
        if dtype is None or _dt.to_dtype(dtype) is self.dtype:
            return F.clone(self) if copy else self
        return F.cast(self, _dt.to_dtype(dtype))

    def type(self, dtype=None) -> str | Tensor:
        """With no argument, the type's name (``'tracegrad.FloatTensor'``); with a dtype, ``to(dtype)``."""
        return f"tracegrad.{self.dtype.torch_name}Tensor" if dtype is None else self.to(dtype)

    def float(self) -> Tensor:
        """This tensor as float32 (itself when it is already)."""
        return F.cast(self, _dt.float32)

    def double(self) -> Tensor:
        """This tensor as float64 (itself when it is already)."""
        return F.cast(self, _dt.float64)

    def half(self) -> Tensor:
        """This tensor as float16 (itself when it is already)."""
        return F.cast(self, _dt.float16)

    def long(self) -> Tensor:
        """This tensor as int64 (itself when it is already)."""
        return F.cast(self, _dt.int64)

    def int(self) -> Tensor:
        """This tensor as int32 (itself when it is already)."""
        return F.cast(self, _dt.int32)

    def short(self) -> Tensor:
        """This tensor as int16 (itself when it is already)."""
        return F.cast(self, _dt.int16)

    def char(self) -> Tensor:
        """This tensor as int8 (itself when it is already)."""
        return F.cast(self, _dt.int8)

    def byte(self) -> Tensor:
        """This tensor as uint8 (itself when it is already)."""
        return F.cast(self, _dt.uint8)

    def bool(self) -> Tensor:
        """This tensor as bool (itself when it is already)."""
        return F.cast(self, _dt.bool_)

    def cpu(self, memory_format=None) -> Tensor:
        """This tensor in host memory: itself for a CPU tensor, a (differentiable) copy of a cuda one."""
        return self.to("cpu")

    def type_as(self, other) -> Tensor:
        """This tensor in ``other``'s dtype (itself when it is already)."""
        return F.cast(self, other.dtype)

    def new_zeros(self, *size, dtype=None, requires_grad: builtins.bool = False, **kwargs) -> Tensor:
        """``tg.zeros(*size)`` of this tensor's dtype and on its device unless given.

        >>> import tracegrad as tg
        >>> tg.ones(1, dtype=tg.float64).new_zeros(2)
        tensor([0., 0.], dtype=tracegrad.float64)
        """
        return _new_like(self, creation.zeros, size, dtype, requires_grad, kwargs)

    def new_ones(self, *size, dtype=None, requires_grad: builtins.bool = False, **kwargs) -> Tensor:
        """``tg.ones(*size)`` of this tensor's dtype and on its device unless given."""
        return _new_like(self, creation.ones, size, dtype, requires_grad, kwargs)

    def new_empty(self, *size, dtype=None, requires_grad: builtins.bool = False, **kwargs) -> Tensor:
        """``tg.empty(*size)`` of this tensor's dtype and on its device unless given."""
        return _new_like(self, creation.empty, size, dtype, requires_grad, kwargs)

    def new_full(self, *size, dtype=None, requires_grad: builtins.bool = False, **kwargs) -> Tensor:
        """``tg.full(size, fill_value)`` of this tensor's dtype and on its device unless given.

        >>> import tracegrad as tg
        >>> tg.arange(3).new_full((2,), 7)
        tensor([7, 7])
        """
        return _new_like(self, creation.full, size, dtype, requires_grad, kwargs)

    def new_tensor(self, data, dtype=None, requires_grad: builtins.bool = False, device=None) -> Tensor:
        """``tg.tensor(data)`` of this tensor's dtype and on its device unless given."""
        return creation.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad,
                               device=self.device if device is None else device)

    def ndimension(self) -> builtins.int:
        """The number of dimensions: ``dim()``."""
        return self.ndim

    def is_contiguous(self, memory_format=None) -> builtins.bool:
        """Whether the storage is row-major without gaps (always, while tracing)."""
        return True if self._is_traced else bool(self._value.flags.c_contiguous)

    def bernoulli(self, p=None, generator: Generator | None = None) -> Tensor:
        """1 with the probability in each element (or ``p``), else 0: ``tg.bernoulli(self)``."""
        return creation.bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples: builtins.int, replacement: builtins.bool = False, *,
                    generator: Generator | None = None) -> Tensor:
        """Indices drawn with the probabilities of each row: ``tg.multinomial(self, ...)``."""
        return creation.multinomial(self, num_samples, replacement, generator=generator)

    def is_complex(self) -> builtins.bool:
        """False: tracegrad has no complex dtypes."""
        return False

    def is_signed(self) -> builtins.bool:
        """Whether the dtype holds negative numbers."""
        return self._dtype.category != 0

    def is_same_size(self, other) -> builtins.bool:
        """Whether ``other`` has this tensor's shape."""
        return tuple(self.shape) == tuple(other.shape)

    def get_device(self) -> builtins.int:
        """The device's index: -1 for the CPU (as PyTorch says it), 0 for cuda."""
        return -1 if self.device.type == "cpu" else 0

    @property
    def is_cpu(self) -> builtins.bool:
        """Whether the data is in host memory."""
        return self.device.type == "cpu"

    @property
    def is_cuda(self) -> builtins.bool:
        """Whether the data is in device memory (core/storage.py)."""
        return self.device.type == "cuda"

    @property
    def itemsize(self) -> builtins.int:
        """The bytes of one element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> builtins.int:
        """The bytes of all elements."""
        return self._dtype.itemsize * self.numel()

    def is_nonzero(self) -> builtins.bool:
        """The truth of a one-element tensor (an error for any other size)."""
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if not self.numel() else 'more than one value'} "
                               "is ambiguous")
        return bool(self)

    def conj(self) -> Tensor:
        """This tensor itself (real dtypes only: the complex API's answer for them)."""
        return self

    conj_physical = conj

    resolve_conj = conj

    resolve_neg = conj

    conj_physical_ = conj

    def is_conj(self) -> builtins.bool:
        """False: no tensor of a real dtype is a conjugate view."""
        return False

    is_neg = is_conj

    def isreal(self) -> Tensor:
        """All True (a bool tensor of this shape): real dtypes only."""
        return creation.ones_like(self, dtype=_dt.bool_)

    @property
    def real(self) -> Tensor:
        """This tensor itself (real dtypes only)."""
        return self

    @property
    def imag(self) -> NoReturn:
        """Raises: no tensor of tracegrad has an imaginary part (no complex dtypes)."""
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def adjoint(self) -> Tensor:
        """The conjugate transpose of the last two dimensions (their transpose: real dtypes)."""
        return self.transpose(-2, -1)

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of the last two dimensions (their transpose: real dtypes)."""
        return self.transpose(-2, -1)

    @property
    def H(self) -> Tensor:
        """The conjugate transpose of a matrix (its transpose: real dtypes)."""
        if self.ndim > 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return self.t()

    def new_empty_strided(self, size, stride, **kw) -> Tensor:
        """``new_empty(size)``: the strides are not kept (every tensor is row-major here)."""
        return self.new_empty(tuple(size), **kw)

    def dim_order(self, **kw) -> tuple[builtins.int, ...]:
        """The order of the dimensions in memory, outermost first: row-major, ``(0, 1, ..., ndim - 1)``."""
        return tuple(range(self.ndim))

    def storage_offset(self) -> builtins.int:
        """Elements between the start of the base tensor's storage and this view's first element."""
        if self._is_traced or self._base is None:
            return 0
        start = self._value.__array_interface__["data"][0]
        return (start - self._base._value.__array_interface__["data"][0]) // self._value.itemsize

    @property
    def is_sparse(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_sparse_csr(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_quantized(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_meta(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_nested(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_mkldnn(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_xla(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_mps(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_xpu(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_ipu(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_vulkan(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_maia(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    @property
    def is_mtia(self) -> builtins.bool:
        """False: tracegrad has no tensors of this kind (PyTorch's attribute, for code that asks)."""
        return False

    def is_pinned(self, device=None) -> builtins.bool:
        """False: no host memory is pinned."""
        return False

    def is_shared(self) -> builtins.bool:
        """False: no tensor is in shared memory."""
        return False

    def cuda(self, device=None, non_blocking: builtins.bool = False, memory_format=None) -> Tensor:
        """A copy in device memory (core/placement.py); without a GPU or the emulation,
        PyTorch's CPU build's error (core/device.py)."""
        return placement.move(self, _device.device("cuda") if device is None else _device.device("cuda", device)
                    if isinstance(device, int) else _device.device(device))

    def bfloat16(self, memory_format=None) -> Tensor:
        """This tensor as bfloat16 (itself when it is already)."""
        return self.to(_dt.bfloat16)


def _new_like(self, factory, args, dtype, requires_grad, kwargs):
    """``factory(*args)`` (new_zeros, new_ones, new_empty, new_full) of ``self``'s dtype and on its
    device (PyTorch's rule) unless the call gives them."""
    kwargs.setdefault("device", self.device)
    return factory(*args, dtype=dtype or self.dtype, requires_grad=requires_grad, **kwargs)
