"""The autograd profiler (mirrors ``torch.autograd.profiler``): records every dispatched op,
every backward node and ``record_function`` ranges with their CPU time.

>>> import tracegrad as tg
>>> x = tg.randn((1, 1), requires_grad=True)
>>> with tg.autograd.profiler.profile() as prof:
...     for _ in range(3):
...         y = x ** 2
...         y.backward()
>>> row = {e.key: e.count for e in prof.key_averages()}
>>> row["pow"], row["PowBackward0"]  # the backward of pow calls pow too (as in PyTorch)
(6, 3)
>>> table = prof.key_averages().table(sort_by="self_cpu_time_total")

Hook points: ``registry.dispatch`` calls ``record_op`` while ``registry._profiler`` is set
(one global check per op when not profiling), and the engine calls ``run_node`` for each
backward node while ``_active`` is non-empty.
"""
from __future__ import annotations

import functools
import itertools
import json
import os
import sys
import threading
import time

from ..core import tracing as trace

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]

_active = []  # profiles currently recording (any thread; each keeps to its own thread)
_lock = threading.Lock()
_ids = itertools.count(1)
_EPOCH_NS = time.perf_counter_ns()


def _now_us():
    return (time.perf_counter_ns() - _EPOCH_NS) / 1000.0


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


# ----------------------------------------------------------------------------- events
class FunctionEvent:
    """One recorded range: an op, a backward node or a user range."""

    def __init__(self, name, thread, start_us, input_shapes=None, kind="cpu_op"):
        self.id = next(_ids)
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_us
        self.end_us = start_us
        self.input_shapes = input_shapes or []
        self.kind = kind
        self.cpu_parent = None
        self.cpu_children = []
        self.count = 1

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time)} "
                f"start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """Events sharing a key (name, and input shapes when grouped by them), summed."""

    def __init__(self, key, input_shapes=None):
        self.key = key
        self.input_shapes = input_shapes
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0

    def add(self, event):
        self.count += event.count
        self.cpu_time_total += event.cpu_time_total
        self.self_cpu_time_total += event.self_cpu_time_total
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    cpu_time_avg = cpu_time

    @property
    def self_cpu_time(self):
        return self.self_cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count} "
                f"input_shapes={self.input_shapes}>")


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "count", "cpu_time_avg",
              "self_cpu_time")


class EventList(list):
    """A list of events with PyTorch's reporting helpers."""

    def __init__(self, events=(), *, grouped_by_shapes=False):
        super().__init__(events)
        self._grouped_by_shapes = grouped_by_shapes

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = {}
        for e in self:
            shapes = str(e.input_shapes) if group_by_input_shape else None
            key = (e.key, shapes)
            if key not in groups:
                groups[key] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else None)
            groups[key].add(e)
        return EventList(groups.values(), grouped_by_shapes=group_by_input_shape)

    def total_average(self):
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        """A text table like PyTorch's: one row per event (or per key after key_averages),
        sorted descending by ``sort_by`` (an event attribute such as "self_cpu_time_total",
        "cpu_time_total" or "count")."""
        rows = list(self)
        if top_level_events_only:
            rows = [e for e in rows if getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            if rows and not hasattr(rows[0], sort_by):
                raise AttributeError(f"'{type(rows[0]).__name__}' object has no attribute '{sort_by}' "
                                     f"(sort_by can be one of {', '.join(_SORT_KEYS)})")
            rows.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        return _render(rows, self.self_cpu_time_total, max_name_column_width,
                       max_shapes_column_width, header, self._grouped_by_shapes)

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace JSON (``chrome://tracing``, Perfetto)."""
        events = []
        pid = os.getpid()
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace needs raw events, not key averages")
            events.append({"name": e.name, "ph": "X", "cat": e.kind, "ts": e.start_us,
                           "dur": e.cpu_time_total, "pid": pid, "tid": e.thread,
                           "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}})
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)

    def __str__(self):
        return self.table()


def _render(rows, self_total, max_name_width, max_shapes_width, header, with_shapes):
    names = [r.key if hasattr(r, "key") else r.name for r in rows]
    name_width = min(max([len(n) for n in names] + [4]) + 4, max_name_width)
    shapes = [str(r.input_shapes) for r in rows] if with_shapes else []
    shape_width = min(max([len(s) for s in shapes] + [12]) + 4, max_shapes_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"] + (["Input Shapes"] if with_shapes else [])
    widths = [name_width] + [12] * 6 + ([shape_width] if with_shapes else [])
    line = "  ".join("-" * w for w in widths) + "  "

    def fmt(cells):
        return "  ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + "  "

    def clip(text, width):
        return text if len(text) <= width else text[:width - 3] + "..."

    total = self_total or 1.0
    out = []
    if header is not None:
        out += ["=" * len(line), header]
    out += [line, fmt(headers), line]
    for r, name in zip(rows, names):
        cells = [clip(name, name_width), f"{100 * r.self_cpu_time_total / total:.2f}%",
                 _format_time(r.self_cpu_time_total), f"{100 * r.cpu_time_total / total:.2f}%",
                 _format_time(r.cpu_time_total), _format_time(r.cpu_time_total / max(r.count, 1)),
                 r.count]
        if with_shapes:
            cells.append(clip(str(r.input_shapes), shape_width))
        out.append(fmt(cells))
    out += [line, f"Self CPU time total: {_format_time(self_total)}", ""]
    return "\n".join(out)


# ----------------------------------------------------------------------------- recording
class profile:
    """Context manager recording the CPU time of every tracegrad op, backward node and
    ``record_function`` range run on this thread inside it.

    Only ``enabled`` and ``record_shapes`` change what is recorded; the other arguments are
    accepted for PyTorch compatibility (tracegrad runs on the CPU only)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, use_mtia=False, experimental_config=None,
                 acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.use_cuda = use_cuda
        self.function_events = None
        self._entered = False
        self._events = []
        self._stack = []
        self._thread = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self._entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._entered = True
        self._thread = threading.get_ident()
        with _lock:
            _active.append(self)
            _sync_registry_flag()
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return
        with _lock:
            _active.remove(self)
            _sync_registry_flag()
        now = _now_us()
        for ev in self._stack:  # ranges left open by an exception end here
            ev.end_us = now
        self._stack = []
        self.function_events = EventList(self._events)

    # -- the EventList API on the finished profile
    def _finished(self):
        return self.function_events if self.function_events is not None else EventList()

    def events(self):
        return self._finished()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        return self._finished().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, *args, **kwargs):
        return self._finished().table(*args, **kwargs)

    def export_chrome_trace(self, path):
        return self._finished().export_chrome_trace(path)

    def total_average(self):
        return self._finished().total_average()

    @property
    def self_cpu_time_total(self):
        return self._finished().self_cpu_time_total

    def __str__(self):
        return self.table()

    # -- recording
    def _begin(self, name, shapes, kind):
        ev = FunctionEvent(name, self._thread, _now_us(), shapes if self.record_shapes else None, kind)
        if self._stack:
            ev.cpu_parent = self._stack[-1]
            self._stack[-1].cpu_children.append(ev)
        self._stack.append(ev)
        self._events.append(ev)
        return ev

    def _end(self, ev):
        ev.end_us = _now_us()
        if self._stack and self._stack[-1] is ev:
            self._stack.pop()


def _sync_registry_flag():
    # (lazy: a true cycle, the ops stand above autograd: the registry records its Nodes)
    from ..ops import registry

    registry._profiler = sys.modules[__name__] if _active else None


def _mine():
    me = threading.get_ident()
    return [p for p in _active if p._thread == me]


class _Range:
    """One open range in every profile recording on this thread."""

    __slots__ = ("opened",)

    def __init__(self, name, shapes, kind):
        self.opened = [(p, p._begin(name, shapes, kind)) for p in _mine()]

    def close(self):
        for p, ev in reversed(self.opened):
            p._end(ev)


def record_op(run, op, inputs, attrs):
    """Called by ``registry.dispatch`` while profiling: time ``run(op, *inputs, **attrs)``."""
    if trace.current_tracer() is not None:  # tg.compile is recording this op, not running it
        return run(op, *inputs, **attrs)
    shapes = [list(t.shape) for t in inputs]
    r = _Range(op.name, shapes, "cpu_op")
    try:
        return run(op, *inputs, **attrs)
    finally:
        r.close()


def run_node(node, grads):
    """Called by the engine while profiling: time one backward node."""
    r = _Range(node.name(), [], "backward")
    try:
        return node.apply(grads)
    finally:
        r.close()


class record_function:
    """Label a block of code (context manager or decorator); it appears as its own row.

    >>> import tracegrad as tg
    >>> with tg.autograd.profiler.profile() as prof:
    ...     with tg.autograd.profiler.record_function("my_block"):
    ...         y = tg.ones(2) + 1
    >>> [e.key for e in prof.key_averages()][:2]
    ['my_block', 'add']
    """

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._range = None

    def __enter__(self):
        self._range = _Range(self.name, [], "user_annotation")
        return self

    def __exit__(self, *exc):
        if self._range is not None:
            self._range.close()
            self._range = None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapper
