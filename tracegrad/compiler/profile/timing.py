"""Timing one C executable kernel by kernel: its timed variant (the same plan rendered with a
clock read where each kernel starts: backends/c/templates/profile.c.j2), run ``warmup`` times
and then ``repeat`` times, the clock readings of each run read back after it.

The untimed program pays nothing: the timed variant is a build of its own (its own cache
entry), made only when a profile asks for it. A program that runs split over its batch on two
threads (backends/c/batch_split.py) is timed unsplit: its kernels are the same, run once over
the whole batch (``Timed.note`` says so).
"""
from __future__ import annotations

import ctypes
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..backends import c as cbackend
from ..backends.c.lower import Plan, lower
from ..backends.c.symbolic import DynamicCExecutable
from .kernels import KernelInfo, describe


class ProfileError(RuntimeError):
    """The program cannot be profiled (the message says why and what would do)."""


@dataclass
class Timed:
    """One executable's measurement: its kernels, the clock readings of each measured run
    (``marks[run, k]``: ns where kernel k started; ``marks[run, -1]``: where the run ended),
    the wall time of each call as the caller saw it (``walls``, ns), the generated source the
    kernels' lines refer to and a note (or "")."""

    name: str
    kernels: list[KernelInfo]
    marks: np.ndarray
    walls: np.ndarray
    source_path: str
    note: str = ""

    def typical(self) -> np.ndarray:
        """The runs that count: those whose total kernel time lies in the middle half (a run
        that a descheduled thread or a page fault held up does not skew the means)."""
        totals = self.marks[:, -1] - self.marks[:, 0]
        order = np.argsort(totals, kind="stable")
        n = len(order)
        return np.sort(order[n // 4:n - n // 4] if n >= 4 else order)

    def kernel_ns(self) -> np.ndarray:
        """Mean time of each kernel over the typical runs (ns); they add up to the runs' mean
        total exactly."""
        runs = self.typical()
        return np.diff(self.marks[runs], axis=1).mean(axis=0)

    def wall_ns(self) -> float:
        """Mean wall time of a call over the typical runs (ns): the kernels, the code around
        them and the call itself (binding arrays, allocating results)."""
        return float(self.walls[self.typical()].mean())


_OTHER = {"interpreter": "the interpreter's (backend='interpreter', or a graph the C backend "
                        "cannot build: see its warning)", "cuda": "a CUDA program"}


def timed_variant(exe: object) -> tuple[cbackend.CExecutable, Plan]:
    """(the timed executable, its plan) of C executable ``exe``; ProfileError when ``exe`` is
    not one."""
    if isinstance(exe, DynamicCExecutable) or not isinstance(exe, cbackend.CExecutable):
        kind = type(exe).__module__.rsplit(".", 1)[-1]
        what = ("a program of runtime sizes (dynamic=True)" if isinstance(exe, DynamicCExecutable)
                else _OTHER.get(kind, f"a {kind} program"))
        raise ProfileError(f"profile times the kernels of C programs (backend='c'); this is {what}")
    options = dict(exe.options, profile=True, batch_split=False)
    timed = cbackend.build(exe.graph, options)
    if not isinstance(timed, cbackend.CExecutable):  # (no C compiler: build gave the interpreter's)
        raise ProfileError("profile needs a working C compiler to build the timed program")
    return timed, lower(exe.graph, timed.options)


def measure(name: str, exe: cbackend.CExecutable, inputs: list, repeat: int, warmup: int) -> Timed:
    """Time C executable ``exe`` (its timed variant) called on ``inputs``."""
    timed, plan = timed_variant(exe)
    kernels = describe(plan, timed.source)
    lib = ctypes.CDLL(timed.path)  # (the library cffi loaded: the same handle, the same clock array)
    count = lib.tg_prof_count()
    if count != len(kernels):
        raise ProfileError(f"internal: the timed program has {count} kernels, its plan "
                           f"{len(kernels)} (please report it)")
    read = lib.tg_prof_read
    read.argtypes = [ctypes.c_void_p]
    read.restype = None
    for _ in range(warmup):
        timed(inputs)
    marks = np.zeros((repeat, count + 1), np.int64)
    walls = np.zeros(repeat, np.int64)
    clock = time.monotonic_ns  # (CLOCK_MONOTONIC, the clock the marks read: calls bracket them)
    for r in range(repeat):
        t0 = clock()
        timed(inputs)
        walls[r] = clock() - t0
        read(marks[r].ctypes.data)
    note = ("runs split over its batch on two threads; timed unsplit, each kernel over the "
            "whole batch" if exe.options.get("batch_split") else "")
    return Timed(name, kernels, marks, walls, _source_file(exe, timed), note)


def _source_file(exe, timed) -> str:
    """The generated C the kernels' line numbers refer to: the program's own cached source
    when the timed variant has the same lines (it differs only by the clock reads on existing
    lines and the functions after the run function), else the timed variant's."""
    own = Path(exe.path).with_suffix(".c")
    if own.is_file() and _TIMING.sub("", timed.source).startswith(exe.source):
        return str(own)
    return str(Path(timed.path).with_suffix(".c"))


# what the timed variant adds on existing lines (backends/c/templates: program.c.j2, function.c.j2)
_TIMING = re.compile(r"static void tg_prof_mark\(int k\); | tg_prof_mark\(\d+\);|tg_prof_mark\(\d+\); ")
