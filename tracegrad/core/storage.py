"""Device storage: what a cuda tensor's ``_value`` is (a CPU tensor's is an ndarray).

A ``DeviceArray`` is a strided view (offset, shape, strides in elements, a NumPy dtype) of a
``DeviceBuffer``, one allocation of device memory made through the device runtime
(compiler/backends/cuda/runtime.py). Views of a cuda tensor share its buffer, as NumPy views
share an array's memory. The data never passes through the host unless asked for:
``to_host`` (``.cpu()``, ``.item()``, printing) and ``from_host`` (``.cuda()``) are the only
copies between the two.

NumPy reaches a DeviceArray only through its protocols, each answered without reading device
memory on the host: ``np.copyto`` into one (an in-place write: a device copy), ``np.add(...,
out=)`` (gradient accumulation: a device op), ``np.empty_like``, ``np.may_share_memory``; any
other use (``np.asarray``: a host read) raises PyTorch's TypeError for a cuda tensor given to
NumPy, so a path that would silently read device memory as host memory cannot exist.
"""
from __future__ import annotations

import numpy as np


NUMPY_MESSAGE = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                 "tensor to host memory first.")


def _placement():
    """core/placement.py (it imports this module, so it is looked up at call time)."""
    from . import placement

    return placement


def runtime():
    # (in the call: the cuda backend stands far above, and loads only once a device is used)
    from ..compiler.backends.cuda import runtime as rt

    return rt.get()


# bytes held now, the peak since the last reset (tg.cuda.memory_allocated), whether dispatch's
# device hook is installed
_allocated = [0, 0, 0]


class DeviceBuffer:
    """One device allocation, freed when the last view of it goes."""

    __slots__ = ("ptr", "nbytes", "_rt")

    def __init__(self, nbytes: int) -> None:
        self._rt = runtime()
        if not _allocated[2]:  # the first device allocation: dispatch learns of devices
            _placement().activate()
            _allocated[2] = 1
        self.nbytes = int(nbytes)
        self.ptr = self._rt.malloc(self.nbytes)
        _allocated[0] += self.nbytes
        _allocated[1] = max(_allocated[1], _allocated[0])

    def __del__(self) -> None:
        try:
            self._rt.free(self.ptr)
            _allocated[0] -= self.nbytes
        except Exception:  # (at interpreter exit the library may already be gone)
            pass


class _Flags:
    __slots__ = ("c_contiguous", "writeable")

    def __init__(self, c_contiguous: bool) -> None:
        self.c_contiguous = c_contiguous
        self.writeable = True


def contiguous_strides(shape) -> tuple:
    """Row-major strides in elements of ``shape`` (a dimension of size 0 counts as 1, as NumPy's
    and PyTorch's do): ``contiguous_strides((2, 3)) == (3, 1)``."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


class DeviceArray:
    """A strided view of device memory: ``buffer``, ``offset`` and ``elem_strides`` in
    elements, ``shape``, ``dtype`` (NumPy's). Attributes read like an ndarray's (``strides`` in
    bytes) so that shape and stride logic written for ndarrays reads it unchanged."""

    __slots__ = ("buffer", "offset", "shape", "elem_strides", "dtype")

    @property
    def device(self):
        from .device import CUDA0  # (not at module level: Tensor imports this module, one floor low)

        return CUDA0

    def __init__(self, buffer: DeviceBuffer, offset: int, shape, elem_strides, dtype) -> None:
        self.buffer = buffer
        self.offset = int(offset)
        self.shape = tuple(int(s) for s in shape)
        self.elem_strides = tuple(int(s) for s in elem_strides)
        self.dtype = np.dtype(dtype)

    # ------------------------------------------------------------------ making one
    @classmethod
    def empty(cls, shape, dtype) -> "DeviceArray":
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        return cls(DeviceBuffer(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize), 0, shape,
                   contiguous_strides(shape), dtype)

    @classmethod
    def from_host(cls, array) -> "DeviceArray":
        """A new device copy of a host array (any layout)."""
        a = np.asarray(array)
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a).reshape(a.shape)  # (ascontiguousarray makes a 0-dim array 1-dim)
        out = cls.empty(a.shape, a.dtype)
        runtime().to_device(out.ptr, a, a.nbytes)
        return out

    # ------------------------------------------------------------------ ndarray-like attributes
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        return tuple(s * self.dtype.itemsize for s in self.elem_strides)

    @property
    def ptr(self) -> int:
        """The device address of the first element."""
        return self.buffer.ptr + self.offset * self.dtype.itemsize

    @property
    def is_contiguous(self) -> bool:
        return all(st == c for s, st, c in zip(self.shape, self.elem_strides, contiguous_strides(self.shape))
                   if s != 1)

    @property
    def flags(self) -> _Flags:
        return _Flags(self.is_contiguous)

    @property
    def base(self):
        """None when this array is its whole buffer (as a fresh ndarray's base is None)."""
        whole = self.offset == 0 and self.is_contiguous and self.nbytes == self.buffer.nbytes
        return None if whole else self.buffer

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, strides={self.elem_strides}, offset={self.offset})"

    # ------------------------------------------------------------------ views and copies
    def view(self, offset: int, shape, elem_strides, dtype=None) -> "DeviceArray":
        """Another view of the same buffer."""
        return DeviceArray(self.buffer, offset, shape, elem_strides, self.dtype if dtype is None else dtype)

    def reshape_view(self, shape) -> "DeviceArray | None":
        """A view of these elements in ``shape`` over the same buffer, or None when strides cannot
        express it (each run of dims the new shape merges or splits must be contiguous within
        itself: the rule NumPy's and PyTorch's views follow)."""
        shape = tuple(int(s) for s in shape)
        old, old_st = self.shape, self.elem_strides
        if not old or 0 in old:
            return self.view(self.offset, shape, contiguous_strides(shape))
        new = [0] * len(shape)
        view_d = len(shape) - 1
        base = old_st[-1]
        tensor_n = view_n = 1
        for d in range(len(old) - 1, -1, -1):
            tensor_n *= old[d]
            if d == 0 or (old[d - 1] != 1 and old_st[d - 1] != tensor_n * base):
                while view_d >= 0 and (view_n < tensor_n or shape[view_d] == 1):
                    new[view_d] = view_n * base
                    view_n *= shape[view_d]
                    view_d -= 1
                if view_n != tensor_n:
                    return None
                if d > 0:
                    base = old_st[d - 1]
                    tensor_n = view_n = 1
        return self.view(self.offset, shape, new) if view_d == -1 else None

    def _span(self) -> tuple[int, int]:
        """(lowest, highest) element offsets this view reaches, relative to ``offset``."""
        lo = sum((n - 1) * st for n, st in zip(self.shape, self.elem_strides) if st < 0)
        hi = sum((n - 1) * st for n, st in zip(self.shape, self.elem_strides) if st > 0)
        return lo, hi

    def byte_bounds(self) -> tuple[int, int]:
        """(first, one past the last) device address this view reaches (NumPy's byte_bounds)."""
        lo, hi = self._span()
        return self.ptr + lo * self.itemsize, self.ptr + (hi + 1) * self.itemsize

    def to_host(self) -> np.ndarray:
        """A new C-contiguous host array of these values (one device-to-host copy)."""
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        rt = runtime()
        if self.is_contiguous:
            out = np.empty(self.shape, self.dtype)
            rt.to_host(out, self.ptr, out.nbytes)
            return out
        lo, hi = self._span()  # the elements the view covers, copied once, then gathered here
        raw = np.empty(hi - lo + 1, self.dtype)
        rt.to_host(raw, self.ptr + lo * self.itemsize, raw.nbytes)
        view = np.lib.stride_tricks.as_strided(raw[-lo:], self.shape, self.strides)
        return np.array(view, copy=True)

    def copy(self) -> "DeviceArray":
        """A contiguous device copy."""
        out = DeviceArray.empty(self.shape, self.dtype)
        copy_into(out, self)
        return out

    def contiguous(self) -> "DeviceArray":
        return self if self.is_contiguous else self.copy()

    # ------------------------------------------------------------------ NumPy's protocols
    def __array__(self, dtype=None, copy=None):
        raise TypeError(NUMPY_MESSAGE)

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func)
        if handler is None:
            raise TypeError(NUMPY_MESSAGE)
        return handler(*args, **kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _placement().ufunc(ufunc, method, inputs, kwargs)


def copy_into(dst: DeviceArray, src) -> None:
    """Write ``src`` (a DeviceArray, broadcast to ``dst``'s shape and cast to its dtype, or a host
    array: copied over first) into ``dst``'s memory, on the device."""
    if not isinstance(src, DeviceArray):
        src = DeviceArray.from_host(np.asarray(src))
    if dst.size == 0:
        return
    if (src.shape == dst.shape and src.dtype == dst.dtype and src.is_contiguous and dst.is_contiguous):
        runtime().on_device(dst.ptr, src.ptr, dst.nbytes)
        return
    from ..compiler.backends.cuda import eager  # (in the call: as runtime() above)

    eager.strided_copy(dst, src)


def _copyto(dst, src, casting="same_kind", where=True):
    if where is not True:
        raise TypeError(NUMPY_MESSAGE)
    if not isinstance(dst, DeviceArray):
        # a compiled program's write-back into a CPU tensor (Adam's 0-dim step count, which
        # stays on the CPU as in PyTorch): copied back, explicitly
        np.copyto(dst, src.to_host(), casting=casting)
        return
    copy_into(dst, src)


def _may_share_memory(a, b, max_work=None):
    return isinstance(a, DeviceArray) and isinstance(b, DeviceArray) and a.buffer is b.buffer


def _empty_like(a, dtype=None, order="K", subok=True, shape=None, device=None):
    return DeviceArray.empty(a.shape if shape is None else shape, a.dtype if dtype is None else dtype)


def _zeros_like(a, dtype=None, order="K", subok=True, shape=None, device=None):
    out = _empty_like(a, dtype, shape=shape)
    runtime().memset(out.ptr, 0, out.nbytes)
    return out


_FUNCTIONS = {np.copyto: _copyto, np.may_share_memory: _may_share_memory, np.shares_memory: _may_share_memory,
              np.empty_like: _empty_like, np.zeros_like: _zeros_like}


def allocated() -> list:
    """[bytes held now, peak, 1 once dispatch learned of devices] of the device memory this
    process holds through cuda tensors (the list itself, updated in place)."""
    return _allocated
