"""The device runtime: a tiny library of CUDA runtime calls (allocate, free, copy to and from
the device, synchronize, count devices), generated ``.cu`` built like the programs are.

Cuda tensors (core/storage.py) own memory obtained here. With ``TRACEGRAD_CUDA_EMULATE=1`` the
library is built by the host C++ compiler through the emulation header, whose ``cudaMalloc``
and ``cudaMemcpy`` are ``malloc`` and ``memmove``: device memory is host memory there, reached
through exactly the calls a GPU build makes. On a machine with a GPU the same source is built
by nvcc; programs built separately share the device's primary context, so a pointer from this
library is valid in every program.

The source below is a constant of this module (nothing user-controlled reaches it).
"""
from __future__ import annotations

import shutil
import threading

from . import NoCuda, build_fixed, emulated, gpu_arch, toolchain

_SOURCE = """\
// tracegrad device runtime: memory and synchronization through the CUDA runtime API
#include <stddef.h>
#ifdef TG_CUDA_EMULATE
#include "tg_cuda_emulate.h"
#else
#include <cuda_runtime.h>
#endif
extern "C" {
int tg_rt_device_count(int *n) { return (int)cudaGetDeviceCount(n); }
int tg_rt_malloc(void **p, size_t n) { return (int)cudaMalloc(p, n ? n : 1); }
int tg_rt_free(void *p) { return (int)cudaFree(p); }
int tg_rt_to_device(void *dst, const void *src, size_t n) {
    return n ? (int)cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) : 0;
}
int tg_rt_to_host(void *dst, const void *src, size_t n) {
    return n ? (int)cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) : 0;
}
int tg_rt_on_device(void *dst, const void *src, size_t n) {
    return n ? (int)cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice) : 0;
}
int tg_rt_memset(void *p, int value, size_t n) { return n ? (int)cudaMemset(p, value, n) : 0; }
int tg_rt_synchronize(void) { return (int)cudaDeviceSynchronize(); }
}
"""

_CDEF = """
int tg_rt_device_count(int *n);
int tg_rt_malloc(void **p, size_t n);
int tg_rt_free(void *p);
int tg_rt_to_device(void *dst, const void *src, size_t n);
int tg_rt_to_host(void *dst, const void *src, size_t n);
int tg_rt_on_device(void *dst, const void *src, size_t n);
int tg_rt_memset(void *p, int value, size_t n);
int tg_rt_synchronize(void);
"""


class CudaError(RuntimeError):
    """A CUDA runtime call failed (names the call and the error code)."""


class Runtime:
    """The loaded runtime library of one build mode ("emulate" or the GPU's sm_XY)."""

    def __init__(self, mode: str, so_path: str) -> None:
        import cffi

        self.mode = mode
        self.ffi = cffi.FFI()
        self.ffi.cdef(_CDEF)
        self.lib = self.ffi.dlopen(so_path)

    def _check(self, rc: int, what: str) -> None:
        if rc:
            raise CudaError(f"CUDA error {rc} in {what} ({self.mode})")

    def malloc(self, nbytes: int) -> int:
        p = self.ffi.new("void **")
        self._check(self.lib.tg_rt_malloc(p, nbytes), f"cudaMalloc of {nbytes} bytes")
        return int(self.ffi.cast("uintptr_t", p[0]))

    def free(self, ptr: int) -> None:
        self.lib.tg_rt_free(self.ffi.cast("void *", ptr))

    def to_device(self, dst: int, host_array, nbytes: int) -> None:
        """Copy ``nbytes`` of a C-contiguous ndarray to device address ``dst``."""
        if nbytes:
            src = self.ffi.from_buffer(host_array)
            self._check(self.lib.tg_rt_to_device(self.ffi.cast("void *", dst), src, nbytes), "cudaMemcpy to the device")

    def to_host(self, host_array, src: int, nbytes: int) -> None:
        """Copy ``nbytes`` from device address ``src`` into a C-contiguous, writeable ndarray."""
        if nbytes:
            dst = self.ffi.from_buffer(host_array, require_writable=True)
            self._check(self.lib.tg_rt_to_host(dst, self.ffi.cast("void *", src), nbytes), "cudaMemcpy to the host")

    def on_device(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.lib.tg_rt_on_device(self.ffi.cast("void *", dst), self.ffi.cast("void *", src), nbytes),
                        "cudaMemcpy on the device")

    def memset(self, ptr: int, value: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.lib.tg_rt_memset(self.ffi.cast("void *", ptr), value, nbytes), "cudaMemset")

    def synchronize(self) -> None:
        self._check(self.lib.tg_rt_synchronize(), "cudaDeviceSynchronize")

    def device_count(self) -> int:
        n = self.ffi.new("int *")
        return 0 if self.lib.tg_rt_device_count(n) else int(n[0])


_runtimes: dict[str, Runtime] = {}
_lock = threading.Lock()


def get() -> Runtime:
    """The runtime of this process's mode (built on first use, then cached on disk). Raises
    NoCuda without a GPU and without emulation."""
    mode = toolchain()[0]
    rt = _runtimes.get(mode)
    if rt is not None:
        return rt
    with _lock:
        if mode not in _runtimes:
            _runtimes[mode] = Runtime(mode, str(build_fixed("cuda-runtime", _SOURCE)))
    return _runtimes[mode]


def available() -> bool:
    """Whether cuda tensors can be made here: under emulation, or with a GPU and nvcc (the
    programs are built for the GPU at run time)."""
    if emulated():
        return True
    return _gpu_usable()


_gpu: list = []


def _gpu_usable() -> bool:
    if not _gpu:
        _gpu.append(gpu_arch() is not None and shutil.which("nvcc") is not None)
    return _gpu[0]


__all__ = ["CudaError", "NoCuda", "Runtime", "available", "get"]
