"""Where the CUDA tests run: on this machine's GPU when it has one (``tg.cuda.is_available()``
without the emulation: a GPU and nvcc), otherwise under the emulation
(TRACEGRAD_CUDA_EMULATE=1: the same generated ``.cu`` built with g++ and run on the CPU).

So on a GPU machine the tests check the real device instead of only adding nvcc builds, and on
every other machine they run as before. An emulation asked for in the environment is kept."""
from __future__ import annotations

import pytest

from tracegrad.compiler.backends import cuda


def has_gpu() -> bool:
    """Whether CUDA is available here without the emulation."""
    import tracegrad as tg

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(cuda.EMULATE_ENV, raising=False)
        return tg.cuda.is_available()


def use_device_or_emulation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run this test on the GPU where there is one, else set the emulation (``monkeypatch``
    undoes it after the test)."""
    if not has_gpu():
        monkeypatch.setenv(cuda.EMULATE_ENV, "1")


def build_mode() -> str:
    """What this test's CUDA programs are built for: ``"emulate"`` or the GPU's ``sm_XY``
    (``CudaExecutable.mode``)."""
    return cuda.toolchain()[0]
