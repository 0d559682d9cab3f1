"""Devices as PyTorch names them: ``tg.device``, ``Tensor.device``, ``device=`` arguments and
``tg.set_default_device``. A tensor lives on the CPU (host memory) or, where ``tg.cuda`` is
available (a GPU, or ``TRACEGRAD_CUDA_EMULATE=1``), on ``cuda:0`` (core/storage.py,
core/placement.py). Any other device, and cuda where it is not available, is refused with the
error PyTorch's CPU build gives (an ``AssertionError`` saying it was not compiled with CUDA),
never ignored: a program that asks for ``cuda`` and silently got the CPU would not be what its
author wrote.

>>> import tracegrad as tg
>>> tg.ones(2).device
device(type='cpu')
>>> tg.device("cuda:1")
device(type='cuda', index=1)
>>> tg.zeros(2, device="cpu").device == tg.device("cpu")
True
"""
from __future__ import annotations

from typing import Union

# the device types PyTorch's device strings may start with (torch.device accepts these names)
_TYPES = ("cpu", "cuda", "mps", "meta", "xpu", "xla", "hip", "ipu", "mkldnn", "opengl", "opencl",
          "ideep", "ve", "fpga", "maia", "lazy", "vulkan", "mtia", "privateuseone", "hpu")


class device:
    """A device: ``type`` (``"cpu"``, ``"cuda"``, ...) and ``index`` (None or an int), built from
    ``"cuda:1"``, ``("cuda", 1)``, another device, or an int (a cuda index), as
    ``torch.device``."""

    __slots__ = ("_type", "_index", "_previous")

    def __init__(self, type: Union[str, "device", int], index: int | None = None) -> None:
        if isinstance(type, device):
            if index is not None:
                raise ValueError("tg.device(): a device and an index cannot both be given")
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type  # (torch.device(0) is cuda:0)
        elif not isinstance(type, str):
            raise TypeError(f"tg.device(): expected a device string, a device or an int, got "
                            f"{builtin_type(type).__name__}")
        else:
            name, sep, rest = type.partition(":")
            if sep:
                if index is not None:
                    raise RuntimeError(f"type (string) must not include an index because index was "
                                       f"passed explicitly: {type}")
                if not rest.isdigit():
                    raise RuntimeError(f"Invalid device string: '{type}'")
                index = int(rest)
            if name not in _TYPES:
                raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                                   f"device string: {type}")
            type = name
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index!r}")
        self._type, self._index = type, index

    @property
    def type(self) -> str:
        return self._type

    @property
    def index(self) -> int | None:
        return self._index

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self) -> str:
        extra = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self._type}'{extra})"

    def __eq__(self, other: object) -> bool:  # (PyTorch: device("cpu") != "cpu")
        return isinstance(other, device) and (self._type, self._index) == (other._type, other._index)

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type, self._index))

    # ``with tg.device("cpu"):`` sets the default device of the block, as in PyTorch
    def __enter__(self) -> "device":
        self._previous = get_default_device()
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> None:
        set_default_device(self._previous)


builtin_type = type
_Device = device  # (for functions whose parameter is named device, as PyTorch's are)
CPU = device("cpu")
CUDA0 = device("cuda", 0)  # (the one GPU tracegrad uses: core/storage.py)
_default = [CPU]


def no_device_error(dev: device) -> AssertionError:
    """PyTorch's CPU build's error for a device it does not have."""
    if dev.type == "cuda":
        return AssertionError("Torch not compiled with CUDA enabled (tracegrad found no CUDA GPU "
                              "here; TRACEGRAD_CUDA_EMULATE=1 emulates one, a testing mode)")
    return AssertionError(f"tracegrad has no '{dev.type}' device in this version: tensors live in "
                          "host memory or on a CUDA GPU")


def _placement():
    """core/placement.py (it imports this module, so it is looked up at call time)."""
    from . import placement

    return placement


def factory_device(d: Union[str, device, int, None]) -> device:
    """Where a new tensor goes: ``d`` (None: the default device) as the CPU or ``cuda:0``;
    raises for a device this build cannot place tensors on."""
    if d is None:
        dev = _default[0]
        if dev is CPU:
            return CPU
    else:
        dev = d
    return _placement().resolve(dev)


def like_device(t, d: Union[str, device, int, None]) -> device:
    """Where a ``*_like`` factory's tensor goes: ``t``'s device unless ``d`` names one."""
    return t.device if d is None else factory_device(d)


def check_device(d: Union[str, device, int, None]) -> device:
    """``d`` as a device (None: the default device) for an API that makes its tensors on the
    CPU only: the CPU; a device this build has not raises PyTorch's error, and cuda (available)
    raises NotImplementedError naming the way that works. In an nn layer's constructor, cuda
    is accepted: the layer is moved there once built (placement.layer_init)."""
    dev = factory_device(d)
    if dev.type != "cpu":
        if _placement().building_layer():
            return dev
        raise NotImplementedError(f"device={str(dev)!r} is not supported here yet: make it on the CPU "
                                  "and move it with .to('cuda') (docs/cuda.md)")
    return CPU


def is_device_like(x: object) -> bool:
    """Whether ``x`` names a device (for ``.to(...)``'s positional arguments)."""
    if isinstance(x, device):
        return True
    if isinstance(x, str):
        return x.partition(":")[0] in _TYPES
    return False


def to_arguments(args: tuple, dtype=None, dev=None) -> tuple:
    """(dtype, device) that ``Tensor.to`` and ``Module.to`` take from their positional
    arguments (a device, a dtype, or a tensor giving both) and keywords; the device resolved
    (None when none is given)."""
    from .tensor import Tensor  # (tensor.py imports this module: looked up at call time)

    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif a is None:
            continue
        elif is_device_like(a):
            dev = a
        else:
            dtype = a
    if dev is not None:
        dev = _placement().resolve(dev)
    return dtype, dev


def set_default_device(device: Union[str, "_Device", int, None]) -> None:
    """The device factories use when given none. As in PyTorch, a device this build has not is
    refused when a tensor is made there (the next factory call), not here."""
    dev = CPU if device is None else device if isinstance(device, _Device) else _Device(device)
    _default[0] = CPU if dev == CPU else dev


def get_default_device() -> device:
    return _default[0]
