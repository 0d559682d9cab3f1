"""``tg.export(fn, *args, dynamic=True)``: an exported C library whose batch size is a runtime value.

The batch size B follows ``tg.compile(dynamic=True)``'s rule (``dynamic.batch_pattern``): the
leading dimension of every tensor argument whose leading size equals the first tensor
argument's is B; other arguments and every lifted tensor (parameters, optimizer state) keep
their shapes. The function is captured as the static export captures it (``export._capture``,
fullgraph), at the example's size and at the three sample sizes of the C backend's symbolic
build (``backends/c/symbolic.py``); the samples are lowered and merged into one C function of
``tg_B`` (``SymbolicPlan``), and the trace at the example's size must be the samples' trace
listing evaluated there (Python that branches on the batch size is caught). Export cannot fall
back to per-size builds: a program that is not one function of B raises ``CompileError``
naming the reason.

The wrapper (compiler/export/templates/export_wrapper.c.j2) reads B from the input that carries it,
checks every shape against ``a*B + c`` and sizes the workspace per call. See docs/export.md.

>>> import tracegrad as tg
>>> W = tg.ones(3, 2)
>>> ep = tg.export(lambda x: (x @ W).relu(), tg.ones(4, 3), name="lin", dynamic=True)
>>> ep.signature["inputs"], ep.signature["outputs"]
([('x', ('B', 3), 'float32'), ('W', (3, 2), 'float32')], [('result', ('B', 2), 'float32')])
"""
from __future__ import annotations

from types import SimpleNamespace

from ...core import pytree
from .library import ExportedProgram, SplitExportedProgram, _capture, _split_parts

EXAMPLE_BATCH = 5  # the batch size the generated example.c calls the library with


class DynamicExportedProgram(ExportedProgram):
    """An :class:`ExportedProgram` whose batch size is a runtime value: ``batch_input``
    ((input index, dim) the C function reads B from), ``workspace`` ((a, c): a*Bp + c bytes,
    Bp = B rounded up to 64), ``batch`` (the example's B), and per TensorSpec ``dims`` ((a, c)
    of a*B + c per dim), ``sym_shape`` (as in ``signature``: "B" for the batch dim) and
    ``dynamic``. ``shape``/``numel``/``nbytes`` of a spec stay those of the example."""

    dynamic = True

    def __init__(self, name, graph, inputs, outputs, sp, batch):
        from ..api import CompileError

        self.plan, self.kernel, self.workspace = sp.plan, sp.source, sp.workspace
        self.filled, self.batch_input, self.symbolic, self.batch = sp.filled, sp.batch_input, sp, batch
        super().__init__(name, graph, inputs, outputs)
        for specs, dims_list, what in ((inputs, sp.input_shapes, "inputs"),
                                       (outputs, sp.output_shapes, "outputs")):
            if len(specs) != len(dims_list):
                raise CompileError(f"tg.export(dynamic=True): {name} has {len(specs)} {what} at batch "
                                   f"size {batch} but {len(dims_list)} at other sizes")
            for t, dims in zip(specs, dims_list):
                t.set_dims(dims)
                if t.eval_shape(batch) != t.shape:
                    raise CompileError(f"tg.export(dynamic=True): {what[:-1]} {t.index} ({t.name}) of {name} "
                                       f"has shape {list(t.shape)} at batch size {batch}, not "
                                       f"{list(t.sym_shape)} = {list(t.eval_shape(batch))}")
                if t.role == "lifted" and t.dynamic:
                    raise CompileError(f"tg.export(dynamic=True): input {t.index} ({t.name}) of {name} "
                                       "is lifted (a parameter or state) but its shape follows the batch size")

    def __str__(self):
        a, c = self.workspace
        lines = [f"ExportedProgram {self.name} (C ABI, dynamic batch B from input {self.batch_input[0]} "
                 f"dim {self.batch_input[1]}; workspace {a}*Bp + {c} bytes, Bp = B rounded up to 64)"]
        lines += [f"  input  {t.index}: {t.name}: {t.type_str} ({t.role})" for t in self.inputs]
        lines += [f"  output {t.index}: {t.name}: {t.type_str} ({t.role})" for t in self.outputs]
        return "\n".join(lines)

    __repr__ = __str__

    def _example_batch(self):
        return [f"  const int64_t B = {EXAMPLE_BATCH};  /* the batch size of this call: any B >= 0 */"]

    def example_inputs(self, batch=None):
        """The current values of the inputs (as ExportedProgram.example_inputs); with ``batch``,
        the batch-sized arguments are cut or tiled to that leading size (a quick test input)."""
        import numpy as np

        arrays = super().example_inputs()
        if batch is None:
            return arrays
        out = []
        for t, a in zip(self.inputs, arrays):
            if t.dynamic:
                a = np.resize(a, t.eval_shape(batch))
            out.append(a)
        return out


def export_dynamic(fn, args, kwargs, name, split=False):
    """Capture ``fn`` at the example's batch size and at SAMPLE_BATCHES and return a
    DynamicExportedProgram (a SplitExportedProgram of two with ``split``)."""
    from ..backends.c.symbolic import SAMPLE_BATCHES
    from ..api import CompileError
    from ..dynamic import _same_capture, _with_batch, batch_pattern, batch_signature

    flat, spec = pytree.flatten((args, kwargs))
    signature = batch_signature(flat)
    pattern = batch_pattern(signature)
    if pattern is None:
        raise CompileError(f"tg.export(dynamic=True): no tensor argument of {name} has a leading "
                           "dimension to be the batch size")
    batch = next(s for s in signature if s is not None)

    def capture(a, k):
        if split:
            f, b, c = _split_parts(fn, a, k, name, keep_trace_text=True)
            return SimpleNamespace(parts=(f, b), caps=c, text=c.trace_text)
        g, ins, outs, cap, text = _capture(fn, a, k, name, full=True)
        return SimpleNamespace(parts=((g, ins, outs),), text=text,
                               caps=SimpleNamespace(cap=cap, positions=[], forward=None, backward=None))

    real = capture(args, kwargs)
    samples = [capture(*pytree.unflatten(spec, _with_batch(flat, pattern, b))) for b in SAMPLE_BATCHES]
    why = _same_capture([real.caps] + [s.caps for s in samples]) or _same_specs([real] + samples)
    if why:
        raise CompileError(f"tg.export(dynamic=True): {name} cannot have a runtime batch size: {why}")
    _check_trace(name, real.text, [s.text for s in samples], batch)
    entries = []
    for k, (graph, ins, outs) in enumerate(real.parts):
        entry = f"{name}_{('forward', 'backward')[k]}" if split else name
        sp = _plan(entry, [s.parts[k][0] for s in samples], what="backward" if k else "program")
        entries.append(DynamicExportedProgram(entry, graph, ins, outs, sp, batch))
    return SplitExportedProgram(name, *entries) if split else entries[0]


def _same_specs(captures):
    """None when every capture has the same ABI (names, roles, dtypes, ranks), else what differs."""
    def abi(c):
        return [[(t.name, t.role, t.dtype_name, len(t.shape)) for t in ins + outs] for _, ins, outs in c.parts]

    first = abi(captures[0])
    return next(("its inputs or outputs (names, roles, dtypes or ranks) differ between batch sizes"
                 for c in captures[1:] if abi(c) != first), None)


def _check_trace(name, text, sample_texts, batch):
    """The trace at the example's batch size must be the samples' listing evaluated there."""
    from ..backends.c.symbolic import SAMPLE_BATCHES, NotSymbolic, SymbolicSource
    from ..api import CompileError

    try:
        traced = SymbolicSource(sample_texts)
    except NotSymbolic as e:
        raise CompileError(f"tg.export(dynamic=True): {name} cannot have a runtime batch size: its trace "
                           f"at batch sizes {', '.join(map(str, SAMPLE_BATCHES))}: {e}") from None
    why = traced.check(text, batch)
    if why is not None:
        raise CompileError(f"tg.export(dynamic=True): {name} cannot have a runtime batch size: the trace "
                           f"at the example's batch size {batch} is not the trace at batch sizes "
                           f"{', '.join(map(str, SAMPLE_BATCHES))} evaluated there ({why}); does the "
                           "function branch on the batch size?")


def _plan(entry, graphs, what):
    """The SymbolicPlan of one entry point (CompileError naming why there is none)."""
    from ..backends.c import Unsupported, render
    from ..backends.c.symbolic import NotSymbolic, SymbolicPlan
    from ..api import CompileError

    try:
        # openmp=True only adds pragmas; the Makefile's OPENMP switch decides whether they act
        sp = SymbolicPlan(graphs, {"openmp": True},
                          lambda p: render(p, graphs[0].name, export=entry, dynamic=True))
    except Unsupported as e:
        raise CompileError(f"tg.export: the C backend cannot compile {entry}: {e}") from None
    except NotSymbolic as e:
        hint = ("; the backward of a split export needs an input with the batch size (a saved "
                "tensor or an incoming gradient)" if what == "backward" and "no input" in str(e) else "")
        raise CompileError(f"tg.export(dynamic=True): {entry} cannot have a runtime batch size: {e}{hint}") \
            from None
    if sp.batch_input is None:
        raise CompileError(f"tg.export(dynamic=True): no input of {entry} has the batch size as a "
                           f"dimension (nothing for the C function to read B from)"
                           + ("; export split=True without dynamic=True" if what == "backward" else ""))
    return sp
