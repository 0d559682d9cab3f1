"""The result of a profile: one row per kernel, a table sorted by time, and a chrome trace."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from .peak import MachinePeak


@dataclass(frozen=True)
class KernelRow:
    """One kernel of a profiled program.

    ``program`` is ``forward``, ``backward`` or ``program`` (a function with no backward
    after the call: a whole training step is one program); ``index`` the kernel's position in
    it; ``kind`` ``loop`` (fused elementwise work and reductions), ``product`` (matrix
    products: ``blas_calls`` GEMM calls) or the op of another kernel; ``label`` says what it
    computes; ``nodes`` the IR nodes it computes (``"%12 mul"``: the ``%`` names of the
    program's listing, ``print(program)``), none for copies into results. ``time_us`` is its
    mean time in a typical run, ``share`` its part of the profile's total time; ``flops`` and
    ``bytes`` its work and least memory traffic (``kernels.py``), ``gflops`` / ``gbs`` their
    rates and ``fma_pct`` / ``bandwidth_pct`` those as a percentage of the machine's measured
    peak (None without one). ``source``, ``line`` and ``end_line``: its generated C."""

    program: str
    index: int
    kind: str
    label: str
    nodes: tuple[str, ...]
    time_us: float
    share: float
    flops: int
    bytes: int
    blas_calls: int
    gflops: float
    gbs: float
    fma_pct: float | None
    bandwidth_pct: float | None
    source: str
    line: int
    end_line: int

    @property
    def link(self) -> str:
        """``file:line`` of its code (editors and terminals open it there)."""
        return f"{self.source}:{self.line}" if self.line else self.source

    @property
    def where(self) -> str:
        """``fwd k3``: the program's short name and the kernel's index."""
        return f"{_short(self.program)}k{self.index}"


_SHORT = {"forward": "fwd ", "backward": "bwd ", "program": ""}


def _short(program: str) -> str:
    """The prefix naming a program in the table (``fwd ``; none for a lone program)."""
    return _SHORT.get(program, program + " ")


@dataclass(frozen=True)
class ProgramTotal:
    """One profiled program: its kernel count, the mean wall time of a call (``call_us``:
    kernels, the code between them and the call itself), the generated C and a note."""

    program: str
    kernels: int
    call_us: float
    kernel_us: float
    source: str
    note: str = ""


class Profile:
    """A per-kernel profile of a compiled call (``compiled.profile(*args)``).

    ``rows``: a KernelRow per kernel, slowest first; ``programs``: a ProgramTotal per program;
    ``total_us``: the calls' mean wall time, programs together (the kernels' times add up to at
    most this); ``peak``: the MachinePeak the percentages are of (None: not measured).
    ``table()`` (also ``str()``) lays them out; ``save_chrome_trace(path)`` writes a trace for
    chrome://tracing or https://ui.perfetto.dev."""

    def __init__(self, name: str, rows: list[KernelRow], programs: list[ProgramTotal],
                 peak: MachinePeak | None, repeat: int, warmup: int) -> None:
        self.name = name
        self.rows = sorted(rows, key=lambda r: (-r.time_us, r.program, r.index))
        self.programs = programs
        self.peak = peak
        self.repeat = repeat
        self.warmup = warmup

    @property
    def total_us(self) -> float:
        """The calls' mean wall time, programs together (microseconds)."""
        return sum(p.call_us for p in self.programs)

    def __repr__(self) -> str:
        return (f"<Profile of {self.name}: {len(self.rows)} kernels, {self.total_us:.1f} us a call>")

    def __str__(self) -> str:
        return self.table()

    def table(self, limit: int | None = 25, hottest: int = 5) -> str:
        """The table, slowest kernel first (``limit`` rows; None: all), then the ``hottest``
        kernels' source lines and IR nodes in full."""
        lines = [f"profile of {self.name}: {len(self.rows)} kernels, {self.total_us:.1f} us a call "
                 f"(mean of the typical runs of {self.repeat}, after {self.warmup} warm-up)"]
        lines.append(self.peak.describe() if self.peak else "machine peak: not measured (no % of peak)")
        for p in self.programs:
            other = p.call_us - p.kernel_us
            lines.append(f"  {p.program}: {p.kernels} kernels {p.kernel_us:.1f} us + call and glue "
                         f"{other:.1f} us; C source {p.source}" + (f" ({p.note})" if p.note else ""))
        head = ("kernel", "what", "IR nodes", "time us", "%", "GFLOP/s", "%FMA", "GB/s", "%BW", "C line")
        body = []
        shown = self.rows if limit is None else self.rows[:limit]
        for r in shown:
            body.append((r.where, _cut(r.label, 34), _cut(_short_nodes(r.nodes), 26), f"{r.time_us:.1f}",
                         f"{100 * r.share:.1f}", _rate(r.gflops, r.flops), _pct(r.fma_pct, r.flops),
                         _rate(r.gbs, r.bytes), _pct(r.bandwidth_pct, r.bytes),
                         f"{_short(r.program)}{r.line}"))  # (of the source above)
        widths = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
        right = {3, 4, 5, 6, 7, 8}
        for row in [head] + body:
            lines.append("  ".join(str(x).rjust(w) if i in right else str(x).ljust(w)
                                   for i, (x, w) in enumerate(zip(row, widths))).rstrip())
        if len(shown) < len(self.rows):
            rest = self.rows[len(shown):]
            lines.append(f"... {len(rest)} more kernels, {sum(r.time_us for r in rest):.1f} us")
        if hottest and self.rows:
            lines.append("hottest kernels:")
            for r in self.rows[:hottest]:
                calls = f", {r.blas_calls} GEMM call{'s' if r.blas_calls != 1 else ''}" if r.blas_calls else ""
                lines.append(f"  {r.where} {r.label} ({r.time_us:.1f} us{calls}): {r.link}"
                             + (f"-{r.end_line}" if r.end_line > r.line else ""))
                if r.nodes:
                    lines.append(f"    IR: {', '.join(r.nodes)}")
        return "\n".join(lines)

    def chrome_trace(self) -> dict:
        """The trace as a dict (Trace Event Format): one complete event per kernel, each
        program's kernels end to end on a thread of its own at their mean times, the programs
        one after the other."""
        events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": f"tracegrad {self.name}"}}]
        start = 0.0
        for tid, p in enumerate(self.programs, 1):
            events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": p.program}})
            t = start
            for r in sorted((r for r in self.rows if r.program == p.program), key=lambda r: r.index):
                events.append({"ph": "X", "name": f"{r.where} {r.label}", "cat": r.kind, "pid": 1, "tid": tid,
                               "ts": round(t, 3), "dur": round(r.time_us, 3),
                               "args": {"nodes": list(r.nodes), "flops": r.flops, "bytes": r.bytes,
                                        "GFLOP/s": round(r.gflops, 3), "GB/s": round(r.gbs, 3),
                                        "fma_pct": r.fma_pct, "bandwidth_pct": r.bandwidth_pct,
                                        "blas_calls": r.blas_calls, "source": r.link}})
                t += r.time_us
            start += p.call_us
        meta = {"peak": asdict(self.peak) if self.peak else None, "repeat": self.repeat, "warmup": self.warmup}
        return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": meta}

    def save_chrome_trace(self, path: str | os.PathLike) -> None:
        """Write ``chrome_trace()`` as JSON to ``path`` (open it in chrome://tracing or
        https://ui.perfetto.dev)."""
        with open(path, "w") as f:
            json.dump(self.chrome_trace(), f, indent=1)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _short_nodes(nodes: tuple[str, ...]) -> str:
    if not nodes:
        return "-"
    return nodes[0] if len(nodes) == 1 else f"{nodes[0]} +{len(nodes) - 1}"


def _rate(value: float, amount: int) -> str:
    return f"{value:.1f}" if amount else "-"


def _pct(value: float | None, amount: int) -> str:
    return f"{value:.1f}" if amount and value is not None else "-"
