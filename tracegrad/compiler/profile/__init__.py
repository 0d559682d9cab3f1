"""A per-kernel profile of compiled programs: ``compiled.profile(*args)`` (and
``python -m tracegrad profile file.py:fn``).

The call's Program is run through a timed variant of its generated C (a clock read where each
kernel starts: ``timing.py``), ``warmup`` times and then ``repeat`` times; each kernel gets its
mean time over the typical runs, its floating-point work and least memory traffic
(``kernels.py``), the rates they make and their share of this machine's measured peak
(``peak.py``: FMA throughput and memory bandwidth, measured once and cached), the IR nodes it
computes and the lines of its generated C. The result is a ``Profile``: ``.rows``, ``.table()``
(``str``) and ``.save_chrome_trace(path)`` (``report.py``).

A function whose outputs are differentiable is profiled as its forward and its backward
(gradients of ones); a whole training step (backward and optimizer inside the function) is one
program. The profile runs the programs on the arguments' values without applying their
effects: parameters, optimizer state and ``.grad`` are left as they were, and nothing is
returned (a program that draws random numbers takes one seed from the generator, as a call). Only the C backend is profiled; other programs raise ProfileError.

>>> import tracegrad as tg
>>> from tracegrad.compiler.profile import MachinePeak
>>> f = tg.compile(lambda x, w: (x @ w).relu().sum())
>>> fake = MachinePeak(100.0, 20.0, 50.0, 10.0, 2, "example")   # (measured: peak=True)
>>> p = profile_call(f, (tg.ones(32, 64), tg.ones(64, 16)), peak=fake, repeat=5)
>>> [(r.kind, r.flops) for r in sorted(p.rows, key=lambda r: r.index)]
[('product', 65536), ('loop', 1024)]
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...core import pytree
from ..dynamic import DynamicProgram
from ..ir.capture import bind_inputs
from .kernels import KernelInfo
from .peak import MachinePeak, machine_peak, measure, remember_peak
from .report import KernelRow, Profile, ProgramTotal
from .timing import ProfileError, Timed
from .timing import measure as measure_timed

if TYPE_CHECKING:
    from ..api import CompiledFunction, CompiledModule
    from ..program import Program

__all__ = ["profile_call", "profile_program", "Profile", "KernelRow", "ProgramTotal", "MachinePeak",
           "machine_peak", "measure", "ProfileError", "remember_peak"]

DEFAULT_REPEAT = 20
DEFAULT_WARMUP = 3


def profile_call(compiled: CompiledFunction | CompiledModule, args: Sequence = (), kwargs: dict | None = None, *,
                 repeat: int = DEFAULT_REPEAT, warmup: int = DEFAULT_WARMUP,
                 peak: MachinePeak | bool = True) -> Profile:
    """Profile ``compiled`` (a ``tg.compile`` result) called with ``args`` and ``kwargs``: the
    Program those arguments select, built if need be (as a call would). ``peak``: True for
    this machine's (``machine_peak``: cached, else measured, about two seconds), a MachinePeak,
    or False for none. A ``dynamic=True`` function is profiled at these arguments' sizes."""
    kwargs = dict(kwargs or {})
    inner = getattr(compiled, "_compiled", compiled)  # (tg.compile(module): its forward's)
    if not hasattr(inner, "inspect") or not hasattr(inner, "programs"):
        raise TypeError(f"profile_call: expected a tg.compile'd function or module, got {type(compiled).__name__}")
    if inner._eager:
        raise ProfileError(f"{inner.__name__} runs eagerly (graph break: {inner.breaks[-1][0] if inner.breaks else '?'}); "
                           "there is no compiled program to profile")
    prog = inner.inspect(*args, **kwargs)
    if isinstance(prog, DynamicProgram):  # (a program of these sizes, as without dynamic=True)
        prog = inner._capture(args, kwargs)
    if getattr(prog, "executable", None) is None:
        raise ProfileError(f"cannot profile {inner.__name__}: these arguments run eagerly")
    flat = pytree.flatten((tuple(args), kwargs))[0]
    return profile_program(prog, flat, repeat=repeat, warmup=warmup, peak=peak)


def profile_program(program: Program, flat_args: Sequence, *, repeat: int = DEFAULT_REPEAT, warmup: int = DEFAULT_WARMUP,
                    peak: MachinePeak | bool = True) -> Profile:
    """Profile ``program`` (a compiler Program) on ``flat_args`` (its call's flattened
    arguments): see ``profile_call``."""
    if not isinstance(repeat, int) or repeat < 1 or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"profile: expected repeat >= 1 and warmup >= 0 (integers), got repeat={repeat!r}, "
                         f"warmup={warmup!r}")
    if peak is True:
        peak = machine_peak()
    elif peak is False or peak is None:
        peak = None
    elif not isinstance(peak, MachinePeak):
        raise TypeError(f"profile: peak must be True, False or a MachinePeak, got {type(peak).__name__}")
    arrays = bind_inputs(program.capture.bindings, list(flat_args))
    has_backward = program.backward_executable is not None
    timed = [measure_timed("forward" if has_backward else "program", program.executable, arrays,
                           repeat, warmup)]
    if has_backward:
        results = program.executable(arrays)
        n_user = len(program.graph.outputs)
        saved = [np.array(a, copy=True) for a in results[n_user:len(program.forward.outputs)]]
        grads = [np.ones(v.shape, v.dtype.np) for v in program.backward_executable.graph.inputs[len(saved):]]
        timed.append(measure_timed("backward", program.backward_executable, saved + grads, repeat, warmup))
    return _profile(program.graph.name, timed, peak, repeat, warmup)


def _profile(name: str, timed: list[Timed], peak: MachinePeak | None, repeat: int, warmup: int) -> Profile:
    totals = [ProgramTotal(t.name, len(t.kernels), t.wall_ns() / 1e3, float(t.kernel_ns().sum()) / 1e3,
                           t.source_path, t.note) for t in timed]
    total_ns = sum(p.call_us for p in totals) * 1e3
    rows = []
    for t in timed:
        for info, ns in zip(t.kernels, t.kernel_ns()):
            rows.append(_row(t, info, float(ns), total_ns, peak))
    return Profile(name, rows, totals, peak, repeat, warmup)


def _row(t: Timed, k: KernelInfo, ns: float, total_ns: float, peak: MachinePeak | None) -> KernelRow:
    gflops = k.flops / ns if ns > 0 else 0.0  # (flop per ns = GFLOP/s)
    gbs = k.bytes / ns if ns > 0 else 0.0
    return KernelRow(program=t.name, index=k.index, kind=k.kind, label=k.label, nodes=k.nodes,
                     time_us=ns / 1e3, share=ns / total_ns if total_ns > 0 else 0.0, flops=k.flops,
                     bytes=k.bytes, blas_calls=k.blas_calls, gflops=gflops, gbs=gbs,
                     fma_pct=100 * gflops / peak.fma_gflops if peak else None,
                     bandwidth_pct=100 * gbs / peak.bandwidth_gbs if peak else None,
                     source=t.source_path, line=k.line, end_line=k.end_line)
