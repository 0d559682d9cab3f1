"""``tg.export``: ahead-of-time export of a captured function as a standalone C (or CUDA) library.

The function is captured as ``tg.compile(..., fullgraph=True)`` would capture it (a graph break
raises CompileError), lowered by the C backend (the same lowering and templates, rendered
without the Python-only runtime bits) and wrapped in the ABI of ../shared/API.md:

    int <name>(const tg_tensor *inputs, int32_t n_inputs, tg_tensor *outputs, int32_t n_outputs);
    const char *<name>_last_error(void);

Inputs: the tensor arguments in order, then the lifted tensors (parameters, optimizer state,
existing ``.grad`` tensors the function reads without receiving them). Outputs: the flattened
results, then the new value of every tensor the function updated (parameters after an
optimizer step, in-place modified arguments, assigned ``.grad``). Non-tensor arguments are
baked into the code. ``split=True`` writes a library with ``<name>_forward`` (the results, then
the saved tensors) and ``<name>_backward`` (saved tensors and incoming gradients -> gradients
of the differentiable inputs), see :class:`SplitExportedProgram`. ``dynamic=True`` makes the
batch size a runtime value of the library (export_dynamic.py). ``backend="cuda"`` lowers with
the CUDA backend and writes a ``.cu`` library on device pointers with the same ABI and checks
(cuda.py; what differs between the targets is in targets.py). See docs/export.md, docs/cuda.md.

>>> import tracegrad as tg
>>> ep = tg.export(lambda x: (x * x).sum(), tg.ones(3), name="sumsq")
>>> ep.signature["inputs"][0]
('x', (3,), 'float32')
>>> ep.signature["outputs"][0]
('result', (), 'float32')
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import os
import re

import numpy as np

from ...core import pytree
from ..backends.c.text import check_export_name, comment_text

# the C ABI's dtype codes (export_header.h.j2's enum): append, never renumber
_ENUM = {"f32": ("TG_FLOAT32", "float32"), "f64": ("TG_FLOAT64", "float64"),
         "i64": ("TG_INT64", "int64"), "i32": ("TG_INT32", "int32"), "b8": ("TG_BOOL", "bool"),
         "i16": ("TG_INT16", "int16"), "i8": ("TG_INT8", "int8"), "u8": ("TG_UINT8", "uint8")}


# headers of ISO C and of the C libraries' own includes (glibc's <stdio.h> includes <features.h>):
# a library named after one writes <name>.h, and -I <its directory> would hide the system's
_SYSTEM_HEADERS = frozenset(
    "assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal stdalign "
    "stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn string tgmath threads time uchar "
    "wchar wctype features alloca endian malloc pthread sched unistd".split())


class TensorSpec:
    """One input or output of an exported function: ``name``, ``shape``, ``dtype`` (tracegrad
    DType), ``role`` ("argument", "lifted", "result", "updated") and its position."""

    def __init__(self, kind, index, name, shape, dtype, role):
        self.kind, self.index, self.name = kind, index, name
        self.shape, self.dtype, self.role = tuple(int(s) for s in shape), dtype, role
        if dtype.short not in _ENUM:
            raise NotImplementedError(f"tg.export: dtype {dtype.name} of {kind} {name!r} has no C ABI code "
                                      f"(exported libraries take {', '.join(c for _, c in _ENUM.values())})")
        self.enum, self.dtype_name = _ENUM[dtype.short]
        self.numel = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.numel * dtype.itemsize
        self.shape_c = ", ".join(map(str, self.shape))
        self.type_str = f"{self.dtype_name}[{self.shape_c}]"
        # the name as C text shows it (comments, string literals): backends/c/text.py
        self.name_c = comment_text(name)
        self.macro = None  # set by ExportedProgram (unique C macro prefix)
        self.source = None  # () -> the current array of the user tensor behind it
        # dynamic=True: per dim (a, c) of a*B + c (None: static); sym_shape writes them as
        # "B", "2*B+1", ... (ints where a == 0); shape/numel/nbytes stay the example's
        self.dims, self.sym_shape, self.dynamic = None, self.shape, False
        self.shape_a, self.shape_cc = None, self.shape_c  # per-dim a and c, C text (templates)

    def set_dims(self, dims):
        """Make the shape ``a*B + c`` per dim (``dims``: list of (a, c), checked against the
        example shape by the caller)."""
        from ..backends.c.symbolic import eval_affine

        self.dims = [tuple(int(x) for x in d) for d in dims]
        self.dynamic = any(a for a, _ in self.dims)
        self.sym_shape = tuple(_dim_text(a, c) for a, c in self.dims)
        self.type_str = f"{self.dtype_name}[{', '.join(map(str, self.sym_shape))}]"
        self.shape_a = ", ".join(str(a) for a, _ in self.dims)
        self.shape_cc = ", ".join(str(c) for _, c in self.dims)
        # C expressions of the macro argument (B) for the header's <T>_SHAPE(B) / <T>_NUMEL(B)
        self.shape_expr = ", ".join(_dim_c(a, c, "(B)") for a, c in self.dims)
        self.numel_expr = " * ".join(f"(int64_t){_dim_c(a, c, '(B)')}" for a, c in self.dims) or "1"
        self.eval_shape = lambda b: tuple(eval_affine(d, b) for d in self.dims)

    @property
    def shape_ref(self):
        """C text of this tensor's shape initializer (``<T>_SHAPE(B)`` for a dynamic shape)."""
        return f"{self.macro}_SHAPE(B)" if self.dynamic else f"{self.macro}_SHAPE"

    @property
    def numel_ref(self):
        return f"{self.macro}_NUMEL(B)" if self.dynamic else f"{self.macro}_NUMEL"

    def __repr__(self):
        return f"TensorSpec({self.kind} {self.index}: {self.name} {self.type_str}, {self.role})"


def _dim_text(a, c):
    """A dim ``a*B + c`` as written in signatures: 5, "B", "2*B", "B+1", "3*B-2"."""
    if a == 0:
        return c
    term = "B" if a == 1 else f"{a}*B"
    return term if c == 0 else f"{term}{c:+d}"


def _dim_c(a, c, var):
    """C text of ``a*var + c`` (int64)."""
    if a == 0:
        return str(c)
    term = var if a == 1 else f"{a}*{var}"
    return term if c == 0 else f"({term} {'+' if c > 0 else '-'} {abs(c)})"


def export(fn, *example_args, backend="c", name=None, dynamic=False, split=False, **example_kwargs):
    """Capture ``fn(*example_args)`` and return an :class:`ExportedProgram`. ``backend``: "c"
    (a C library on host memory) or "cuda" (a ``.cu`` library on device pointers, docs/cuda.md).

    >>> import tracegrad as tg
    >>> W = tg.ones(2, 3, requires_grad=True)
    >>> def loss_and_grad(x):
    ...     loss = (x @ W).square().sum()
    ...     return loss, tg.autograd.grad(loss, W)[0]
    >>> ep = tg.export(loss_and_grad, tg.ones(4, 2))
    >>> [n for n, _, _ in ep.signature["inputs"]], [n for n, _, _ in ep.signature["outputs"]]
    (['x', 'W'], ['result[0]', 'result[1]'])
    """
    from .targets import target_for

    target = target_for(backend)  # what is particular to C or CUDA (targets.py, cuda.py)
    name = name or getattr(fn, "__name__", None) or "exported"
    check_export_name(name)  # it becomes C identifiers and file names (backends/c/text.py)
    target.check_name(name)
    if name.lower() in _SYSTEM_HEADERS:
        raise ValueError(f"tg.export: name {name!r} would write {name}.h, which hides the C library's "
                         f"<{name.lower()}.h> from programs compiled with -I <library directory>: expected another "
                         "name; pass name=...")
    if dynamic:  # the leading size of the batch arguments is a runtime value (export_dynamic.py)
        from .dynamic import export_dynamic

        target.check_dynamic(name)
        return export_dynamic(fn, example_args, example_kwargs, name, split)
    if split:
        return SplitExportedProgram(name, *_capture_split(fn, example_args, example_kwargs, name, target))
    graph, inputs, outputs = _capture(fn, example_args, example_kwargs, name)
    return ExportedProgram(name, graph, inputs, outputs, target)


def _capture(fn, args, kwargs, name, full=False):
    """Trace with fullgraph semantics, optimise, and order inputs/outputs for the ABI.
    ``full``: also return the capture and the listing of the trace before any pass (what
    dynamic=True compares between batch sizes)."""
    from ..api import CompileError, _prune_inputs
    from .. import passes
    from ..ir import trace
    from ..ir.capture import trace_function

    try:
        cap = trace_function(fn, args, kwargs, name=name)
    except trace.GraphBreak as gb:
        where = f" at {gb.where}" if gb.where else ""
        raise CompileError(f"tg.export: graph break in {name}: {gb.reason}{where}") from None
    if full:
        from ..dynamic import trace_listing

        trace_text = trace_listing(cap.graph)
    cap.tracer = None  # no differentiation pass: the C caller gets values, not autograd graphs
    g = cap.graph
    passes.optimize(g)
    _prune_inputs(g, cap, [])
    if cap.actions:
        kinds = sorted({a[0] for a in cap.actions})
        raise CompileError(f"tg.export: {name} sets .grad to {' / '.join(kinds)} (no tensor data to "
                           "export); return gradients instead, or call zero_grad() before backward")
    arg_input = {b.ref: k for k, b in enumerate(cap.bindings) if b.kind == "arg"}
    results = []
    for leaf_no, (kind, ref) in enumerate(cap.out_leaves):
        if kind == "value":
            results.append(g.outputs[ref])
        elif kind == "arg" and ref in arg_input:
            results.append(g.inputs[arg_input[ref]])
        else:
            raise CompileError(f"tg.export: result {leaf_no} of {name} is not a tensor computed by the "
                               f"function ({type(ref).__name__ if kind == 'python' else 'an argument'}); "
                               "exported functions return tensors")
    g.outputs = results
    g.saved = []
    g.renumber()
    in_specs = _input_specs(cap, g.inputs)
    out_names = ["result"] if len(results) == 1 else [f"result[{k}]" for k in range(len(results))]
    out_specs = [TensorSpec("out", k, out_names[k], v.shape, v.dtype, "result")
                 for k, v in enumerate(results)]
    # updated values follow the order of their inputs (then new .grad tensors), so that the
    # j-th updated lifted input is easy to find; the lowering sees the same order
    in_pos = {t.name: k for k, t in enumerate(in_specs)}
    named = [(re.sub(r"\s*(<-|=)$", "", desc), v, desc, target)
             for (v, desc), target in zip(g.writebacks, cap.writebacks)]
    named.sort(key=lambda e: in_pos.get(e[0], len(in_pos)))  # stable: the rest keep their order
    g.writebacks = [(v, desc) for _, v, desc, _ in named]
    for nm, v, _, _ in named:
        out_specs.append(TensorSpec("out", len(out_specs), nm, v.shape, v.dtype, "updated"))
    flat = pytree.flatten((args, kwargs))[0]
    for t, b in zip(in_specs, cap.bindings):
        t.source = (lambda b=b: _binding_array(b.kind, b.ref, flat))
    for t, (_, _, _, (kind, ref)) in zip(out_specs[len(results):], named):
        t.source = (lambda kind=kind, ref=ref: _binding_array(kind, ref, flat))
    if full:
        return g, in_specs, out_specs, cap, trace_text
    return g, in_specs, out_specs


def _input_specs(cap, inputs):
    """One TensorSpec per graph input, named after the argument or the lifted tensor bound to it."""
    specs = []
    for k, (b, v) in enumerate(zip(cap.bindings, inputs)):
        if b.kind == "arg":
            nm, role = cap.arg_names[b.ref], "argument"
        elif b.kind == "seed":
            nm, role = "seed", "random seed (int64 scalar)"
        else:
            nm, role = cap.naming.of((b.kind, b.ref)), "lifted"
        specs.append(TensorSpec("in", k, nm, v.shape, v.dtype, role))
    return specs


def _binding_array(kind, ref, flat):
    """The current array of the user tensor behind an input binding or write-back target."""
    if kind == "seed":
        return np.zeros((), np.int64)
    if kind == "set_grad":  # ref is ("arg_grad", i) or (kind, the tensor whose .grad is set)
        kind, ref = ref
        if kind != "arg_grad":
            return ref._grad._value
    if kind in ("arg", "arg_grad"):
        t = flat[ref]
        return (t._grad if kind == "arg_grad" else t)._value
    return (ref._grad if kind == "grad" else ref)._value


def _host_copy(value):
    """A host array copy of a tensor's value (a cuda tensor's device memory is copied back)."""
    from ...core.storage import DeviceArray

    return value.to_host() if isinstance(value, DeviceArray) else np.array(value, copy=True)


def _c_values(arr, dtype):
    """Exact C initializer text for a constant array."""
    flat = np.asarray(arr, dtype=dtype.np).reshape(-1)
    if flat.size == 0:
        return "0"
    if dtype.is_floating_point:
        suffix = "f" if dtype.short == "f32" else ""
        out = []
        for x in flat.tolist():
            if x != x:
                out.append("NAN")
            elif x in (float("inf"), float("-inf")):
                out.append("INFINITY" if x > 0 else "-INFINITY")
            else:
                out.append(float(x).hex() + suffix)
        return ", ".join(out)
    if dtype.short == "i64":
        return ", ".join("(-INT64_C(9223372036854775807) - 1)" if x == -2**63 else f"INT64_C({x})"
                         for x in flat.tolist())
    return ", ".join(str(int(x)) for x in flat.tolist())


# what the example programs fill a floating-point input with (element i; a split export's incoming
# gradients are ones): small varied values, so that a result printed is not all zeros
_EXAMPLE_FILL = "0.01 * (double)(i % 17)"


class ExampleBuffer(NamedTuple):
    """One buffer of the generated example program: its C variable, the tensor it holds, the
    comment above it and the C expression of element ``i`` it is filled with (None: zeros)."""

    var: str
    spec: TensorSpec
    comment: str
    fill: str | None


class ExportedProgram:
    """The result of :func:`export`: ``name``, ``signature`` ({"inputs": [(name, shape,
    dtype name)], "outputs": [...]}), ``inputs``/``outputs`` (TensorSpec lists), ``graph`` (the
    IR), ``workspace`` (bytes per call) and ``files()`` / ``save(directory)``."""

    dynamic = False  # dynamic=True: see export_dynamic.DynamicExportedProgram
    filled = ()  # (constant index, dims, value) of constants filled per call (dynamic only)

    def __init__(self, name, graph, inputs, outputs, target=None):
        from ..api import CompileError
        from .targets import target_for

        self.name, self.graph, self.inputs, self.outputs = name, graph, inputs, outputs
        self.target = target or target_for("c")
        self.NAME = name.upper()
        collectives = sorted({n.op.name for n in graph.nodes if n.op.kind == "collective"})
        if collectives:  # (compiled programs get the collective's function pointer from tracegrad's loader)
            raise CompileError(f"tg.export: {name} holds {', '.join(collectives)}, which an exported library "
                               "cannot run: it has no MPI of its own (tracegrad.distributed)")
        if not self.dynamic:  # (dynamic.py plans its own, at every batch size)
            self.plan, self.kernel, self.workspace = self.target.lower(graph, name)
        used = set()
        for t in inputs + outputs:
            base = f"{name.upper()}_{'IN' if t.kind == 'in' else 'OUT'}_" + \
                   (re.sub(r"[^A-Za-z0-9]+", "_", t.name).strip("_").upper() or str(t.index))
            macro = base if base not in used else f"{base}_{t.index}"
            used.add(macro)
            t.macro = macro

    @property
    def signature(self):
        return {"inputs": [(t.name, t.sym_shape, t.dtype_name) for t in self.inputs],
                "outputs": [(t.name, t.sym_shape, t.dtype_name) for t in self.outputs]}

    def example_inputs(self):
        """The current values of the tensors bound to the inputs (arguments as given to export,
        parameters and optimizer state as they are now): feed them to the C function to start
        where Python is."""
        return [_host_copy(t.source()) for t in self.inputs]

    def updated_values(self):
        """The current values of the tensors behind the "updated" outputs (after an eager call
        of the function these are what the C function returns in those positions)."""
        return [_host_copy(t.source()) for t in self.outputs if t.role == "updated"]

    def __str__(self):
        lines = [f"ExportedProgram {self.name} ({self.target.abi}, workspace {self.workspace} bytes)"]
        lines += [f"  input  {t.index}: {t.name}: {t.type_str} ({t.role})" for t in self.inputs]
        lines += [f"  output {t.index}: {t.name}: {t.type_str} ({t.role})" for t in self.outputs]
        return "\n".join(lines)

    __repr__ = __str__

    def example_source(self):
        """A complete program that calls the library once and prints element 0 of every output
        (C; for backend="cuda" a C++ host program on device copies of the buffers)."""
        bufs, arrays = [], []
        for group, specs in (("in", self.inputs), ("out", self.outputs)):
            for t in specs:
                fill = _EXAMPLE_FILL if group == "in" and t.dtype.is_floating_point else None
                bufs.append(ExampleBuffer(f"{group}{t.index}", t, f"{group}put {t.index}: {t.name_c} {t.type_str}",
                                          fill))
            arrays.append((f"{group}puts", [(f"{group}{t.index}", t) for t in specs]))
        return self.target.example(self.name, self._example_batch(), bufs, arrays, [(self, "inputs", "outputs")],
                                   [(f"out{t.index}", t) for t in self.outputs])

    def _example_batch(self):
        """Lines declaring the batch size the example calls a dynamic export with."""
        return []

    def files(self):
        """{file name: text} of the library directory."""
        return render_library(self.name, [self], self.example_source())

    def save(self, directory):
        """Write the library's sources into ``directory`` (created if needed); returns its path."""
        os.makedirs(directory, exist_ok=True)
        for fname, text in self.files().items():
            with open(os.path.join(directory, fname), "w") as f:
                f.write(text)
        return str(directory)



def _jinja_env():
    import jinja2

    from ..backends.c import _templates_dir

    # the library's own templates, then the C backend's (the runtime it includes)
    dirs = [str(Path(__file__).resolve().parent / "templates"), str(_templates_dir())]
    return jinja2.Environment(loader=jinja2.FileSystemLoader(dirs),
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def render_library(name, entries, example, kind=""):
    """{file name: text} of a library ``name`` whose entry points are ``entries``
    (ExportedPrograms of one target): one header, one ``<entry>.c`` (``.cu``) per entry,
    Makefile, CMake, README, the example program and what the target adds."""
    target = entries[0].target
    env = _jinja_env()
    files, sources = {}, []
    for e in entries:
        filled = {k: (dims, value) for k, dims, value in e.filled}
        consts = []
        for k, c in enumerate(e.plan.graph.constants()):  # the lowered graph's, in slot order
            if k in filled:  # its shape follows the batch size: filled per call (dynamic only)
                dims, value = filled[k]
                consts.append({"ctype": c.dtype.c_type, "filled": True, "itemsize": c.dtype.itemsize,
                               "fill": _c_values(np.asarray(value), c.dtype),
                               "dims": [(int(a), int(cc)) for a, cc in dims]})  # (checked products)
            else:
                consts.append({"ctype": c.dtype.c_type, "filled": False, "init": _c_values(c.data, c.dtype),
                               "count": max(int(np.prod(c.shape, dtype=np.int64)), 1)})
        ctx = dict(name=e.name, header=name, graph_name=comment_text(e.graph.name), inputs=e.inputs,
                   outputs=e.outputs, workspace=e.workspace, kernel=e.kernel, consts=consts,
                   n_slots=max(len(e.inputs) + len(consts) + len(e.outputs), 1),
                   dynamic=e.dynamic, batch_input=getattr(e, "batch_input", None),
                   max_ndim=max([len(t.shape) for t in e.inputs + e.outputs] + [1]),
                   thread_local=target.thread_local)
        files[f"{e.name}.{target.ext}"] = env.get_template(target.template("wrapper")).render(ctx)
        sources.append(e.name)
    ctx = dict(name=name, NAME=name.upper(), entries=entries, sources=sources, kind=kind, target=target,
               graph_name=comment_text(entries[0].graph.name))
    return {f"{name}.h": env.get_template("export_header.h.j2").render(ctx), **files,
            "Makefile": env.get_template(target.template("Makefile")).render(ctx),
            "CMakeLists.txt": env.get_template(target.template("CMakeLists.txt")).render(ctx),
            "README.md": env.get_template(target.template("README.md")).render(ctx, example=example),
            target.example_file: example + "\n", **target.extra_files()}


# ----------------------------------------------------------------------------- split=True
def _capture_split(fn, args, kwargs, name, target):
    """Trace, differentiate, optimise and partition as ``tg.compile`` does for differentiable
    outputs (compiler.capture_program); returns the forward and backward entry points as
    ExportedPrograms ``<name>_forward`` and ``<name>_backward``."""
    (fwd, in_specs, f_out), (bwd, b_in, b_out), _ = _split_parts(fn, args, kwargs, name)
    return ExportedProgram(f"{name}_forward", fwd, in_specs, f_out, target), \
        ExportedProgram(f"{name}_backward", bwd, b_in, b_out, target)


def _split_parts(fn, args, kwargs, name, keep_trace_text=False):
    """(forward graph, inputs, outputs), (backward graph, inputs, outputs), CapturedGraphs."""
    from ..api import CompileError, capture_graphs
    from ..ir import trace

    try:
        c = capture_graphs(fn, args, kwargs, name=name, keep_trace_text=keep_trace_text)
    except trace.GraphBreak as gb:
        where = f" at {gb.where}" if gb.where else ""
        raise CompileError(f"tg.export: graph break in {name}: {gb.reason}{where}") from None
    cap = c.cap
    if cap.actions or c.graph.writebacks:
        raise CompileError(f"tg.export(split=True): {name} updates tensors in place (parameters, "
                           ".grad); split export takes a pure function; export it without split=True")
    if c.forward is None:
        raise CompileError(f"tg.export(split=True): no output of {name} requires grad through an "
                           "input (nothing to differentiate); export it without split=True")
    for error, message, _ in getattr(cap, "backward_errors", ()):
        # (a backward rule refused a gradient: C has no .backward() to raise it at, so now)
        raise CompileError(f"tg.export(split=True): the backward of {name} cannot be built: {error}: {message}")
    positions = c.positions
    diff_outs = [k for k, _ in cap.diff_outputs]
    fwd, bwd = c.forward, c.backward
    leaf_of = {}
    results = []
    for leaf_no, (kind, ref) in enumerate(cap.out_leaves):
        if kind != "value":
            raise CompileError(f"tg.export(split=True): result {leaf_no} of {name} is not a tensor "
                               "computed by the function; exported functions return tensors")
        leaf_of[ref] = leaf_no
        results.append(fwd.outputs[ref])
    n_res = len(results)
    out_names = ["result"] if n_res == 1 else [f"result[{k}]" for k in range(n_res)]
    saved = list(fwd.saved)
    fwd.outputs = results + saved
    fwd.saved = []
    fwd.renumber()
    bwd.renumber()
    in_specs = _input_specs(cap, fwd.inputs)
    f_out = [TensorSpec("out", k, out_names[k], v.shape, v.dtype, "result") for k, v in enumerate(results)]
    f_out += [TensorSpec("out", n_res + j, f"saved[{j}]", v.shape, v.dtype, "saved for backward")
              for j, v in enumerate(saved)]
    b_in = [TensorSpec("in", j, f"saved[{j}]", v.shape, v.dtype, "saved by forward")
            for j, v in enumerate(bwd.inputs[:len(saved)])]
    for k, (pos, v) in enumerate(zip(diff_outs, bwd.inputs[len(saved):])):
        b_in.append(TensorSpec("in", len(b_in), f"grad {out_names[leaf_of[pos]]}", v.shape, v.dtype,
                               "incoming gradient"))
    b_out = [TensorSpec("out", k, f"grad {in_specs[p].name}", v.shape, v.dtype, "gradient")
             for k, (p, v) in enumerate(zip(positions, bwd.outputs))]
    flat = pytree.flatten((args, kwargs))[0]
    for t, b in zip(in_specs, cap.bindings):
        t.source = (lambda b=b: _binding_array(b.kind, b.ref, flat))
    return (fwd, in_specs, f_out), (bwd, b_in, b_out), c


class SplitExportedProgram:
    """The result of ``tg.export(..., split=True)``: one library ``name`` with two entry points,
    ``forward`` (inputs -> results, then the saved tensors) and ``backward`` (the saved tensors,
    then one incoming gradient per differentiable result -> one gradient per differentiable
    input), each an :class:`ExportedProgram` (``.inputs``, ``.outputs``, ``.workspace``)."""

    def __init__(self, name, forward, backward):
        self.name, self.forward, self.backward = name, forward, backward

    @property
    def signature(self):
        return {"forward": self.forward.signature, "backward": self.backward.signature}

    def example_inputs(self):
        return self.forward.example_inputs()

    def __str__(self):
        return (f"SplitExportedProgram {self.name} ({self.forward.target.abi}: {self.forward.name}, "
                f"{self.backward.name})\n"
                + str(self.forward) + "\n" + str(self.backward))

    __repr__ = __str__

    def example_source(self):
        """A complete program: forward, then backward with gradients of ones (C; for
        backend="cuda" a C++ host program on device copies of the buffers)."""
        f, b = self.forward, self.backward
        n_res = sum(t.role == "result" for t in f.outputs)
        n_saved = len(f.outputs) - n_res
        bufs = []
        for tag, specs in (("fi", f.inputs), ("fo", f.outputs), ("bi", b.inputs[n_saved:]), ("bo", b.outputs)):
            for t in specs:
                fill = "1" if tag == "bi" else _EXAMPLE_FILL if tag == "fi" and t.dtype.is_floating_point else None
                bufs.append(ExampleBuffer(f"{tag}{t.index}", t, f"{t.name_c} {t.type_str}", fill))
        # the backward's saved inputs are the forward's saved outputs: the same buffers
        arrays = [("f_in", [(f"fi{t.index}", t) for t in f.inputs]),
                  ("f_out", [(f"fo{t.index}", t) for t in f.outputs]),
                  ("b_in", [(f"fo{n_res + j}", t) for j, t in enumerate(b.inputs[:n_saved])]
                   + [(f"bi{t.index}", t) for t in b.inputs[n_saved:]]),
                  ("b_out", [(f"bo{t.index}", t) for t in b.outputs])]
        prints = [(f"fo{t.index}", t) for t in f.outputs[:n_res]] + [(f"bo{t.index}", t) for t in b.outputs]
        return f.target.example(self.name, f._example_batch(), bufs, arrays,
                                [(f, "f_in", "f_out"), (b, "b_in", "b_out")], prints)

    def files(self):
        """{file name: text} of the library directory."""
        return render_library(self.name, [self.forward, self.backward], self.example_source(),
                              kind="split forward/backward")

    save = ExportedProgram.save
