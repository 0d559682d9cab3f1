"""``tg.cuda`` (PyTorch's ``torch.cuda``). Where a CUDA GPU and nvcc are present, or under
``TRACEGRAD_CUDA_EMULATE=1`` (the generated CUDA run on the CPU: a testing mode), one device,
``cuda:0``, is available: cuda tensors live in its memory (docs/cuda.md). Elsewhere the
queries answer as PyTorch's CPU build does (no device, nothing allocated), seeding is accepted,
and anything that needs a GPU raises the CPU build's error.

>>> import tracegrad as tg
>>> device = "cuda" if tg.cuda.is_available() else "cpu"
>>> tg.ones(2, device=device).device == tg.device(device if device == "cpu" else "cuda:0")
True
"""
from __future__ import annotations

from .core.device import device as _device
from .core.device import no_device_error as _no_device_error

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "synchronize", "current_device", "set_device", "get_device_name",
           "get_device_capability", "get_device_properties", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "is_bf16_supported", "device"]


def is_available() -> bool:
    """Whether cuda tensors can be made: a GPU (and nvcc, which builds the programs) on this
    machine, or the emulation (TRACEGRAD_CUDA_EMULATE=1)."""
    from .core.placement import cuda_available

    return cuda_available()


def device_count() -> int:
    """1 where cuda is available (tracegrad uses the first GPU only), else 0."""
    return 1 if is_available() else 0


def is_initialized() -> bool:
    from .core.storage import allocated

    return bool(allocated()[2])


def _runtime():
    if not is_available():
        raise _no_device_error(_device("cuda"))
    from .compiler.backends.cuda import runtime

    return runtime.get()


def manual_seed(seed: int) -> None:
    """Accepted. Random cuda tensors are drawn on the host by the default generator
    (``tg.manual_seed`` seeds them), so there is no separate device generator to seed."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    int(seed)


def seed() -> None:
    pass


def seed_all() -> None:
    pass


def synchronize(device=None) -> None:
    """Wait for the device's work (every program waits for its own kernels already)."""
    _runtime().synchronize()


def current_device() -> int:
    _runtime()
    return 0


def set_device(device) -> None:
    _runtime()
    index = device if isinstance(device, int) else _device(device).index
    if index not in (None, 0):
        raise RuntimeError(f"CUDA error: invalid device ordinal (cuda:{index}: this machine has 1 device)")


def get_device_name(device=None) -> str:
    rt = _runtime()
    return "tracegrad CUDA emulation (CPU)" if rt.mode == "emulate" else f"CUDA GPU ({rt.mode})"


def get_device_capability(device=None) -> tuple[int, int]:
    rt = _runtime()
    if rt.mode == "emulate":
        return (0, 0)
    return (int(rt.mode[3:-1]), int(rt.mode[-1]))


def get_device_properties(device=None):
    raise NotImplementedError("tg.cuda.get_device_properties is not implemented (docs/cuda.md)")


def empty_cache() -> None:
    pass  # (no caching allocator: device memory is freed when its last tensor goes)


def memory_allocated(device=None) -> int:
    """Bytes of device memory held by cuda tensors now (0 where cuda is not available)."""
    from .core.storage import allocated

    return allocated()[0] if is_available() else 0


def max_memory_allocated(device=None) -> int:
    from .core.storage import allocated

    return allocated()[1] if is_available() else 0


memory_reserved = memory_allocated
max_memory_reserved = max_memory_allocated


def reset_peak_memory_stats(device=None) -> None:
    from .core.storage import allocated

    a = allocated()
    a[1] = a[0]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


class device:  # (torch.cuda.device, a context manager selecting a GPU)
    def __init__(self, device) -> None:
        set_device(device)

    def __enter__(self) -> "device":
        return self

    def __exit__(self, *exc) -> None:
        pass
