"""Eager ops on cuda tensors: each op a single-op program from this backend's generator.

``run_op`` is what an op on cuda tensors does (core/placement.py calls it from dispatch):

- a view op the renderer expresses as strides (reshape wherever the strides allow it,
  permute, expand, slice, flip) makes a new DeviceArray over the same buffer: no kernel,
  shared memory, as NumPy's views on the CPU;
- any other op is a one-node IR graph built with ``build`` (lowered, rendered, compiled and
  cached on disk as every program is) and kept here by (op, input shapes and dtypes, attrs),
  so each distinct call compiles once per process at most;
- an op the backend cannot lower (no CUDA rule, an unsupported dtype) runs its NumPy kernel on
  host copies of the inputs and the result is copied back: said once per op in the log
  (``TRACEGRAD_LOG=devices``), never silently different.

``strided_copy`` writes one device array into another of any layout (broadcast and dtype cast
included): in-place writes into views, ``.contiguous()``, dtype conversions.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np

from . import PRELUDE, Unsupported, build, build_fixed, launch_lines, load, run_program
from .lower import BLOCK, MAX_GRID, index_expr, unravel
from .rules import RULES
from ..c.views import View, coalesce

_programs: dict = {}  # key -> CudaExecutable, or None: the op runs on the host
_lock = threading.Lock()
_MISSING = object()
_host_ops_logged: set = set()
_host_reasons: dict = {}  # op name -> why it has no CUDA program (its Unsupported)


class _NeedsCopy(Exception):
    pass


class _ViewsOnly:
    """The lowerer a view rule sees here: asked to materialize (a layout strides cannot
    express), it says so, and the op runs as a program instead (a copy, as NumPy's reshape)."""

    def _materialize(self, v, view):
        raise _NeedsCopy


_VIEWS_ONLY = _ViewsOnly()


def _view(op, arr, attrs, shape):
    from ....ops import movement as M

    if op is M.RESHAPE:  # (the DeviceArray's own rule: the one x.view() on a cuda tensor follows)
        return arr.reshape_view(shape)
    rule = RULES.lookup(op)
    if rule is None or rule.kind != "view":
        return None
    node = SimpleNamespace(op=op, attrs=attrs, inputs=[SimpleNamespace(shape=arr.shape)],
                           out=SimpleNamespace(shape=tuple(shape)))
    try:
        v = rule.fn(_VIEWS_ONLY, node, View("x", arr.offset, arr.shape, arr.elem_strides))
    except _NeedsCopy:
        return None
    return arr.view(v.offset, v.shape, v.strides)


def _freeze(x):
    """A hashable, exact form of an attribute value (floats by repr: -0.0 and nan differ)."""
    if isinstance(x, dict):
        return ("d",) + tuple(sorted((k, _freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return ("t",) + tuple(_freeze(v) for v in x)
    if isinstance(x, np.ndarray):
        return ("a", x.shape, str(x.dtype), x.tobytes())
    if isinstance(x, (float, np.floating)):
        return ("f", repr(float(x)))
    try:
        hash(x)
    except TypeError:
        return ("r", repr(x))
    return (type(x).__name__, x)


def run_op(op, arrays, attrs, shape, dtype):
    """``op`` on device arrays (inputs in op order) -> a DeviceArray of ``shape``/``dtype``."""
    if len(arrays) == 1:
        out = _view(op, arrays[0], attrs, shape)
        if out is not None:
            return out
    key = (op.name, tuple((a.shape, a.dtype.str) for a in arrays), _freeze(attrs))
    exe = _once(_programs, key, lambda: _build_single(op, arrays, attrs, shape, dtype))
    if exe is None:
        _log_host(op)
        return _on_host(op, arrays, attrs, shape, dtype)
    return exe(arrays)[0]


def _once(table: dict, key, make):
    """``table[key]``, made by ``make()`` the first time: under the lock, so that threads asking
    together build one program; a hit takes no lock (the eager path is per op)."""
    value = table.get(key, _MISSING)
    if value is _MISSING:
        with _lock:
            value = table.get(key, _MISSING)
            if value is _MISSING:
                value = table[key] = make()
    return value


def _build_single(op, arrays, attrs, shape, dtype):
    from ....core import dtypes as _dt
    from ...ir.graph import Graph

    g = Graph(name=f"eager_{op.name}")
    ins = [g.add_input(a.shape, _dt.from_numpy_dtype(a.dtype), f"x{k}") for k, a in enumerate(arrays)]
    g.outputs = [g.add_node(op, ins, dict(attrs), tuple(shape), dtype)]
    try:
        return build(g)
    except Unsupported as e:
        _host_reasons[op.name] = str(e)
        return None


def _log_host(op):
    """Say once per op, the first time it falls back while the log topic is on, why."""
    from .... import _logging

    if op.name not in _host_ops_logged and _logging.enabled("devices"):
        _host_ops_logged.add(op.name)
        _logging.log("devices", "%s on cuda tensors runs on the host (copies in and out): %s", op.name,
                     _host_reasons.get(op.name, ""))


def _on_host(op, arrays, attrs, shape, dtype):
    """The op's NumPy kernel on host copies; the result copied to the device. (The same steps
    as dispatch's eager CPU path, which stays inline there for its speed.)"""
    from ....core import dtypes as _dt
    from ....core.storage import DeviceArray

    host = [a.to_host() for a in arrays]
    if dtype is _dt.bfloat16 or (host and host[0].dtype == _dt.bfloat16.np):
        host = _dt.widen_bfloat16(host)
    value = np.asarray(op.impl(*host, **attrs))
    if value.dtype != dtype.np:
        value = value.astype(dtype.np)
    return DeviceArray.from_host(value)


# ----------------------------------------------------------------------------- strided copies
_copies: dict = {}


def strided_copy(dst, src):
    """Write device array ``src`` (broadcast to ``dst.shape``, cast to ``dst.dtype``) into
    device array ``dst``, both of any layout, with one kernel."""
    if src.buffer is dst.buffer:  # (overlapping reads and writes: go through a fresh copy)
        tmp = type(src).empty(src.shape, src.dtype)
        strided_copy(tmp, src)
        src = tmp
    sv = View("s", 0, src.shape, src.elem_strides).broadcast_to(dst.shape)
    shape, (s_st, d_st), _ = coalesce(list(dst.shape), [list(sv.strides), list(dst.elem_strides)])
    key = (tuple(shape), tuple(s_st), tuple(d_st), src.dtype.str, dst.dtype.str)
    lib = _once(_copies, key, lambda: load(build_fixed("cuda-copy", copy_source(*key))))
    run_program(lib, [src, dst], "strided copy")


def _c_type(np_dtype):
    from ....core import dtypes as _dt

    return _dt.from_numpy_dtype(np.dtype(np_dtype)).c_type


def copy_source(shape, s_st, d_st, s_dt, d_dt):
    """The ``.cu`` of a strided copy over (coalesced) ``shape``: one grid-stride kernel reading
    with strides ``s_st`` and writing with ``d_st``, casting NumPy dtype ``s_dt`` to ``d_dt``."""
    total = int(np.prod(shape, dtype=np.int64))
    st, dt = _c_type(s_dt), _c_type(d_dt)
    lines, names = unravel("i", shape, "i")
    si = index_expr(View("s", 0, shape, s_st), names)
    di = index_expr(View("d", 0, shape, d_st), names)
    value = "(s[{}] != 0)".format(si) if np.dtype(d_dt) == np.bool_ else f"({dt})s[{si}]"
    body = "\n".join("    " + x for x in lines)
    grid = max(1, min((total + BLOCK - 1) // BLOCK, MAX_GRID))
    return "\n".join([
        "// tracegrad strided copy", PRELUDE,
        f"__global__ void tg_copy(const {st} *__restrict__ s, {dt} *__restrict__ d) {{",
        f"  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < {total}; "
        "i += (int64_t)gridDim.x * blockDim.x) {",
        body,
        f"    d[{di}] = {value};",
        "  }",
        "}",
        'extern "C" int tg_cuda_run(void **args) {',
        "  int rc = 0;",
        *launch_lines([f"TG_LAUNCH(tg_copy, dim3({grid}), dim3({BLOCK}), ({st} *)args[0], ({dt} *)args[1]);"]),
        "done:",
        "  return rc;",
        "}",
        "",
    ])
