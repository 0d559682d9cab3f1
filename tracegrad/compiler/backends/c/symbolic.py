"""``dynamic=True`` on the C backend: one generated function whose batch size is a runtime value.

The lowering works on concrete shapes, so the batch size is made symbolic *around* it: the
program is captured and lowered at three sample batch sizes (multiples of 64), and the three C
sources must be identical except for numeric literals. Each literal that differs must be an
exact function of the batch size B of one of two forms:

- an integer ``a*B + c`` (loop bounds, strides, matrix sizes, view offsets), or
- a float ``a*B + c`` or ``k/B`` with small rational ``a, c, k`` (``mean`` over the batch folds
  its divisor into a literal);

it becomes that expression of the runtime ``tg_B`` in ``tg_run_dyn(args, ws, tg_B)``. Workspace
offsets are expressions of ``tg_Bp`` (B rounded up to 64), which keeps every buffer 64-byte
aligned for every B, and the layout is checked to be disjoint for every B >= 0 (a layout that
reuses memory in a way only safe for large B is replaced by a stacked one). Anything else raises
``NotSymbolic`` naming the reason, and the caller keeps one build per batch size.

The same merge applies to the listings of the traces themselves (tracegrad/dynamic.py): before
the symbolic code runs at a batch size never seen, the function is traced at that size (no
lowering, no compiler) and ``SymbolicSource.check`` demands exactly the sampled listing evaluated
at that B, so Python code that branches on the batch size gets a build of its own, not wrong code.

>>> fit_int([3 * b + 5 for b in SAMPLE_BATCHES])
(3, 5)
>>> fit_int([1, 2, 4]) is None
True
"""
from __future__ import annotations

import re
from fractions import Fraction

import numpy as np

from . import CExecutable, _ffi_instance, memory

SAMPLE_BATCHES = (320, 448, 704)  # multiples of 64: rounded sizes stay affine in B
_NUM = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?![\w.])")
_OFFSET_TEXT = "ws + "  # program.c.j2 places work buffers at (ws + <offset>)


class NotSymbolic(Exception):
    """The program cannot be one function of the batch size (the message says why)."""


# ---------------------------------------------------------------------------- fitting
def fit_int(values, batches=SAMPLE_BATCHES):
    """``(a, c)`` with ``v == a*B + c`` exactly at every sample, or None."""
    (b1, b2), (v1, v2) = batches[:2], values[:2]
    if (v2 - v1) % (b2 - b1):
        return None
    a = (v2 - v1) // (b2 - b1)
    c = v1 - a * b1
    return (a, c) if all(v == a * b + c for v, b in zip(values, batches)) else None


def _simple(x, rel):
    """The simplest fraction within ``rel`` of ``x`` (small denominators), or None."""
    f = Fraction(x).limit_denominator(1 << 16)
    return f if abs(float(f) - x) <= rel * max(abs(x), 1e-30) else None


def _fit_float(values, batches, single):
    """A C expression of ``tg_B`` reproducing the float literal at every sample, or None.
    ``single``: the literal is cast to float, so it must round to the same float32."""
    def same(x, v):
        return _same_float(x, v, single)

    rel = 1e-6 if single else 1e-12
    k = _simple(values[0] * batches[0], rel)  # k / B
    if k is not None and k != 0 and all(same(float(k) / b, v) for v, b in zip(values, batches)):
        return f"((double){k.numerator}/((double){k.denominator}*(double)tg_B))"
    a = _simple((values[1] - values[0]) / (batches[1] - batches[0]), rel)
    if a is not None:
        c = _simple(values[0] - float(a) * batches[0], rel)
        if c is not None and all(same(float(a) * b + float(c), v) for v, b in zip(values, batches)):
            return (f"((double){a.numerator}/{a.denominator}.0*(double)tg_B"
                    f" + (double){c.numerator}/{c.denominator}.0)")
    return None


def int_expr(a, c, var="tg_B"):
    """C text of ``a*var + c`` (int64)."""
    term = var if a == 1 else f"(int64_t){a}*{var}"
    return term if c == 0 else f"({term} + {c})" if c > 0 else f"({term} - {-c})"


def eval_affine(ac, batch):
    return ac[0] * batch + ac[1]


# ---------------------------------------------------------------------------- sources
class SymbolicSource:
    """Three sources (at SAMPLE_BATCHES) merged into one whose varying literals are
    expressions of ``tg_B``; ``check`` verifies a source lowered at another batch size."""

    def __init__(self, sources, batches=SAMPLE_BATCHES):
        parts = [_NUM.split(s) for s in sources]
        if len({len(p) for p in parts}) != 1:
            raise NotSymbolic("the generated code has a different structure at different batch sizes")
        self.text = parts[0][0::2]
        for p in parts[1:]:
            if p[0::2] != self.text:
                raise NotSymbolic("the generated code has a different structure at different batch sizes")
        # per literal: ("same", text) | ("int", (a, c), is_offset) | ("float", expr, single)
        self.literals = []
        out = [self.text[0]]
        for k, toks in enumerate(zip(*(p[1::2] for p in parts))):
            before = self.text[k]
            if len(set(toks)) == 1:
                lit = ("same", toks[0])
                out.append(toks[0])
            elif all(t.isdigit() for t in toks):
                ac = fit_int([int(t) for t in toks], batches)
                if ac is None:
                    raise NotSymbolic(f"a size in the generated code ({', '.join(toks)} at batch "
                                      f"{', '.join(map(str, batches))}) is not linear in the batch size")
                offset = before.endswith(_OFFSET_TEXT)
                lit = ("int", ac, offset)
                out.append(int_expr(*ac, var="tg_Bp" if offset else "tg_B"))
            else:
                single = _is_single(before, self.text[k + 1])
                expr = _fit_float([float(t) for t in toks], batches, single)
                if expr is None:
                    raise NotSymbolic(f"a constant in the generated code ({', '.join(toks)}) is neither "
                                      "linear in the batch size nor k / batch size")
                lit = ("float", expr, single)
                out.append(expr)
            self.literals.append(lit)
            out.append(self.text[k + 1])
        self.source = "".join(out)
        self.depends_on_batch = any(lit[0] != "same" for lit in self.literals)

    def check(self, source, batch):
        """None when ``source`` (lowered at ``batch``) is this source evaluated at ``batch``,
        else the first difference. Workspace offsets are not compared: at a batch size that
        is not a multiple of 64 the planner rounds differently, and the symbolic layout is
        verified for every batch size by ``check_layout``."""
        p = _NUM.split(source)
        if p[0::2] != self.text:
            return "it has a different structure at this batch size" + _first_difference(p[0::2], self.text)
        for tok, lit in zip(p[1::2], self.literals):
            if lit[0] == "same":
                if tok != lit[1]:
                    return f"a literal is {tok} at this batch size where every sample had {lit[1]}"
            elif lit[0] == "int":
                if not lit[2] and int(tok) != eval_affine(lit[1], batch):
                    return f"a size is {tok} at this batch size, not {eval_affine(lit[1], batch)}"
            elif not _same_float(_eval_float(lit[1], batch), float(tok), lit[2]):
                return f"a constant is {tok} at this batch size, not {_eval_float(lit[1], batch)}"
        return None


def _first_difference(texts, expected):
    for got, want in zip(texts, expected):
        if got != want:
            return f" ({got.strip()[:60]!r} where other sizes have {want.strip()[:60]!r})"
    return " (a different length)"


def _is_single(before, after):
    """A float32 literal: cast to float in C, or typed f32 in an IR listing."""
    return before.rstrip().endswith("(float)") or after.startswith(":f32")


def _same_float(x, v, single):
    if single:
        return np.float32(x) == np.float32(v) or (np.isnan(x) and np.isnan(v))
    return abs(x - v) <= 2 * np.spacing(abs(v))


def _eval_float(expr, batch):
    """The value of an expression made by ``_fit_float`` at ``batch`` (inf at batch 0)."""
    try:
        return float(eval(expr.replace("(double)", "").replace("tg_B", f"({batch})"),
                          {"__builtins__": {}}))
    except ZeroDivisionError:
        return float("inf")


# ---------------------------------------------------------------------------- layout
def _layout(plan):
    out = {}
    for b in plan.buffers:
        if b.kind == "work":
            start = b.first if b.first is not None else -1
            end = b.last if b.last is not None else start
            out[b.name] = (b.offset, memory._round(max(b.nbytes, 1)), start, end)
    return out


def check_layout(plans, batches=SAMPLE_BATCHES):
    """Affine (offset, size) per work buffer, raising NotSymbolic unless buffers that are live
    together are disjoint for every batch size >= 0; returns the affine workspace size."""
    layouts = [_layout(p) for p in plans]
    if len({tuple(sorted(lay)) for lay in layouts}) != 1:
        raise NotSymbolic("the workspace has different buffers at different batch sizes")
    aff = {}
    for name in layouts[0]:
        rows = [lay[name] for lay in layouts]
        if len({r[2:] for r in rows}) != 1:
            raise NotSymbolic("buffer lifetimes differ between batch sizes")
        off, size = fit_int([r[0] for r in rows], batches), fit_int([r[1] for r in rows], batches)
        if off is None or size is None or min(off + size) < 0:
            raise NotSymbolic("the workspace layout is not linear in the batch size")
        aff[name] = (off, size, rows[0][2], rows[0][3])
    items = list(aff.values())
    for i, (oi, si, fi, li) in enumerate(items):
        for oj, sj, fj, lj in items[i + 1:]:
            if li < fj or lj < fi:
                continue  # never live together
            lo, hi = ((oi, si), oj) if eval_affine(oi, batches[0]) < eval_affine(oj, batches[0]) \
                else ((oj, sj), oi)
            gap = (hi[0] - lo[0][0] - lo[1][0], hi[1] - lo[0][1] - lo[1][1])
            if gap[0] < 0 or gap[1] < 0:
                raise NotSymbolic("the reused workspace layout is unsafe at small batch sizes")
    ws = fit_int([p.workspace for p in plans], batches)
    if ws is None or min(ws) < 0:
        raise NotSymbolic("the workspace size is not linear in the batch size")
    return ws


# ---------------------------------------------------------------------------- building
def _shapes_affine(shape_lists, what):
    out = []
    for shapes in zip(*shape_lists):
        if len({len(s) for s in shapes}) != 1:
            raise NotSymbolic(f"{what} change rank with the batch size")
        dims = [fit_int(list(d)) for d in zip(*shapes)]
        if any(d is None for d in dims):
            raise NotSymbolic(f"{what} are not linear in the batch size")
        out.append(dims)
    return out


def _batch_sized_fills(const_lists):
    """Constants whose shape follows the batch size must be one value throughout (zeros that
    folding materialised, say): (index, affine dims, value) for each, filled per batch size."""
    out = []
    for k, consts in enumerate(zip(*const_lists)):
        if all(c.shape == consts[0].shape and np.array_equal(c, consts[0]) for c in consts):
            continue
        dims = _shapes_affine([[c.shape] for c in consts], "constant shapes")[0]
        flat = [c.ravel() for c in consts]
        if any(f.size == 0 or not np.all(f == f[0]) for f in flat) or len({f[0].item() for f in flat}) != 1:
            raise NotSymbolic("a constant of the program depends on the batch size")
        out.append((k, dims, flat[0][0]))
    return out


class SymbolicPlan:
    """The merged result of lowering one program at every sample batch size: ``source`` (C
    with ``tg_B``), ``workspace``, ``input_shapes`` and ``output_shapes`` (per dim ``(a, c)``
    of ``a*B + c``; the workspace in terms of B rounded up to 64), ``batch_input`` ((input,
    dim) holding B, or None), ``filled`` ((constant index, dims, value) of constants filled
    per batch size), ``plan`` (the first sample's lowering: buffers, constants, dtypes)."""

    def __init__(self, graphs, options, render_source):
        from .lower import lower

        plans = [lower(g, dict(options, reuse_memory=True)) for g in graphs]
        try:
            self.workspace = check_layout(plans)
        except NotSymbolic:  # best-fit reuse that only large batches make safe: stack instead
            plans = [lower(g, dict(options, reuse_memory=False)) for g in graphs]
            self.workspace = check_layout(plans)
        self.plan = plans[0]
        if len({(tuple(p.inplace), tuple(p.deferred)) for p in plans}) > 1:
            raise NotSymbolic("the results written in place differ between batch sizes")
        self.symbolic = SymbolicSource([render_source(p) for p in plans])
        self.source = self.symbolic.source
        self.filled = _batch_sized_fills([p.consts for p in plans])
        self.input_shapes = _shapes_affine([[tuple(v.shape) for v in g.inputs] for g in graphs],
                                           "input shapes")
        self.output_shapes = _shapes_affine([[s for s, _ in p.out_specs] for p in plans], "output shapes")
        self.batch_input = next(((i, d) for i, dims in enumerate(self.input_shapes)
                                 for d, ac in enumerate(dims) if ac == (1, 0)), None)
        if self.symbolic.depends_on_batch and self.batch_input is None:
            raise NotSymbolic("the code depends on the batch size but no input has it as a dimension")


def build(graphs, options=None):
    """One DynamicCExecutable from the same program's IR at each of SAMPLE_BATCHES (raises
    NotSymbolic, or lower.Unsupported for an op without a C lowering)."""
    from . import cache_key, render, resolve_openmp, toolchain
    from ...cache import get_or_build, make_key

    options = dict(options or {})
    options["openmp"] = resolve_openmp(graphs[0], options)
    try:
        cc_version, flag_list = toolchain.toolchain(openmp=options["openmp"],
                                                    native=options.get("native", True))
    except toolchain.NoCompiler as e:
        raise NotSymbolic(str(e)) from None
    sp = SymbolicPlan(graphs, options, lambda p: render(p, graphs[0].name, dynamic=True))
    key = make_key({"symbolic": sp.source, "base": cache_key(graphs[0], options, flag_list, cc_version)})
    meta = {"workspace": 0, "source": sp.source,
            "outputs": [[[0] * len(dims), np.dtype(d).name]
                        for dims, (_, d) in zip(sp.output_shapes, sp.plan.out_specs)],
            "inplace": [list(p) for p in sp.plan.inplace], "deferred": list(sp.plan.deferred)}

    def do_build(tmpdir):
        return toolchain.compile_shared(sp.source, str(tmpdir), flag_list), meta

    try:
        if options.get("cache", True):
            so_path, meta, hit = get_or_build(key, do_build)
        else:
            import tempfile

            so_path, meta = do_build(tempfile.mkdtemp(prefix="tracegrad-nocache-"))
            hit = False
    except toolchain.NoCompiler as e:  # passed its probes, then built nothing (CC=/bin/true)
        raise NotSymbolic(str(e)) from None
    return DynamicCExecutable(graphs[0], str(so_path), meta, options, hit, sp)


class DynamicCExecutable(CExecutable):
    """A loaded ``tg_run_dyn``: call it with the input arrays (and ``batch=`` when no input has
    the batch size, as for a backward); output shapes and the workspace follow the batch.
    Calls and ``run_into`` are CExecutable's (output buffers reused, results written in place)
    once everything that depends on the batch size is set for it (``_set_batch``)."""

    entry = "tg_run_dyn"

    def __init__(self, graph, so_path, meta, options, cache_hit, sp):
        super().__init__(graph, so_path, meta, options, cache_hit)
        self.symbolic = sp.symbolic
        self.input_shapes = sp.input_shapes  # per input, per dim: (a, c) of a*B + c
        self.output_shapes = sp.output_shapes
        self.workspace = sp.workspace  # (a, c) bytes in terms of B rounded up to 64
        self.batch_input = sp.batch_input  # (input index, dim) holding B, or None
        self._ws_bytes = 0
        self._filled = sp.filled  # (constant index, affine dims, value): filled per batch size
        self._run_dyn = self._run  # tg_run_dyn(args, ws, B); self._run binds B (_set_batch)
        self.last_batch = None

    def _workspace(self, batch):
        need = eval_affine(self.workspace, (batch + 63) // 64 * 64)
        if need > self._ws_bytes:
            ws = np.empty(need + 64, np.uint8)
            addr = ws.ctypes.data
            self._ws_array, self._ws_bytes = ws, need
            self._ws = _ffi_instance().cast("char *", addr + (-addr) % 64)
        return self._ws

    def _set_batch(self, batch):
        """Output shapes (and so the reused buffers), batch-sized constants, the workspace and
        the entry's B argument for this batch size."""
        self.last_batch = batch
        self._outs = [(tuple(eval_affine(d, batch) for d in dims), dt)
                      for dims, (_, dt) in zip(self.output_shapes, self._outs)]
        self._reset_outputs()
        fb = self._from_buffer
        for k, dims, value in self._filled:
            c = np.full(tuple(eval_affine(d, batch) for d in dims), value)
            self._consts[k] = c
            self._ptrs[self._n_in + k] = fb(c)
        self._workspace(batch)
        run = self._run_dyn
        self._run = lambda ptrs, ws: run(ptrs, ws, batch)

    def _batch_of(self, inputs):
        i, d = self.batch_input if self.batch_input else (None, None)
        return inputs[i].shape[d] if i is not None else 0

    def _twin(self):
        twin = super()._twin()
        # (copied while another thread's call may be setting this one's batch: the twin sets
        # its own on its first call)
        twin.last_batch = None
        return twin

    def __call__(self, inputs, batch=None):
        if not self._lock.acquire(False):  # (busy: CExecutable.__call__)
            return self._on_twin(lambda twin: twin(inputs, batch))
        try:
            batch = self._batch_of(inputs) if batch is None else batch
            if batch != self.last_batch:
                self._set_batch(batch)
            return self._call(inputs)
        finally:
            self._lock.release()

    def run_into(self, inputs, targets):
        if not self._lock.acquire(False):
            return self._on_twin(lambda twin: twin.run_into(inputs, targets))
        try:
            batch = self._batch_of(inputs)
            if batch != self.last_batch:
                self._set_batch(batch)
            return super().run_into(inputs, targets)
        finally:
            self._lock.release()

    def _raise(self, inputs):
        # (the interpreter's graph has the first sample's sizes: it cannot name the error;
        # dynamic.DynamicProgram catches this and names it from a capture at this batch size)
        raise CompiledCallFailed("index out of bounds in a compiled program")


class CompiledCallFailed(IndexError):
    """A program with a runtime batch size returned a failure code (runtime.h.j2 TG_FAIL_*)."""
