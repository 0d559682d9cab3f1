"""Compiled programs of cuda tensors: which backend builds them, and the interpreter's place
among them.

A function whose tensors (arguments, parameters, optimizer state, gradients) are on cuda is
built by this backend whatever backend was asked for (tg.compile's default is "c", which cannot
read device memory), except the interpreter when asked for by name. Its executable is handed
the tensors' device arrays and returns device arrays (CudaExecutable), and the write-backs of
parameters, gradients and optimizer state are device-to-device copies into their storage.

A graph this backend cannot lower runs on the interpreter, as for CPU tensors: here through
``HostRoundTrip``, which copies the inputs to the host and the results back, so that the
program's callers see device arrays either way (and the warning that named the op says why it
is slow).
"""
from __future__ import annotations

from typing import Any

import numpy as np


def on_device(cap, args, kwargs) -> bool:
    """Whether the traced call's tensors are on cuda; a CPU tensor of more than 0 dims among
    cuda ones raises PyTorch's error, as the first op mixing them would in eager mode."""
    from ....core import pytree
    from ....core.placement import mixed_devices_error
    from ....core.device import CUDA0
    from ....core.storage import DeviceArray
    from ....core.tensor import Tensor

    tensors = [t for t in pytree.flatten((args, kwargs))[0] if isinstance(t, Tensor)]
    for b in cap.bindings:
        if b.kind == "data":
            tensors.append(b.ref)
        elif b.kind == "grad" and b.ref._grad is not None:
            tensors.append(b.ref._grad)
    device = [t for t in tensors if t._value.__class__ is DeviceArray]
    if not device:
        return False
    host = [t for t in tensors if t._value.__class__ is not DeviceArray and t.ndim]
    if host:
        raise mixed_devices_error(CUDA0, "cpu")
    return True


def wrap(exe: Any) -> Any:
    """``exe`` for device arrays: itself when it is a CUDA program, else a HostRoundTrip."""
    from . import CudaExecutable

    if exe is None or isinstance(exe, CudaExecutable):
        return exe
    return HostRoundTrip(exe)


class HostRoundTrip:
    """A host executable (the interpreter's) called with device arrays: inputs copied to the
    host, results copied back to the device (when any input was there)."""

    fresh_results = True  # (results are new device arrays, or copies of the host ones)

    def __init__(self, exe) -> None:
        self.inner = exe

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def __call__(self, inputs, **kwargs):
        from ....core.storage import DeviceArray

        host, on_device = [], False
        for a in inputs:
            if a.__class__ is DeviceArray:
                on_device = True
                a = a.to_host()
            host.append(a)
        results = self.inner(host, **kwargs)
        if on_device:
            return [DeviceArray.from_host(np.asarray(r)) for r in results]
        return [np.array(r, copy=True) for r in results]
