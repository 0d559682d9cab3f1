"""The op registry: one ``OpDef`` per primitive, carrying every rule of that primitive, and
``dispatch``, the single path by which any primitive runs (eagerly or into a trace).

An OpDef holds:
- ``infer(*inputs, **attrs) -> (shape, dtype)``: inputs are anything with ``.shape`` and
  ``.dtype`` (Tensors, IR values); it validates and raises clear errors;
- ``impl(*arrays, **attrs) -> ndarray``: the NumPy implementation (also the interpreter's);
- ``vjp(ctx, g) -> tuple``: one gradient per input (or None), written with tracegrad ops so it
  is itself differentiable and traceable; broadcasting and dtype are fixed up centrally;
- ``jvp(ctx, *tangents) -> tangent``: forward mode (tangents of non-differentiable inputs are None);
- ``save``: what ``vjp`` reads: input positions and/or ``"out"``. This is the saved-tensor
  annotation the differentiation pass and the ``.saved`` report use;
- ``no_derivative``: input positions PyTorch defines no derivative for (igamma's ``a``, zeta's
  ``x``): the result still requires grad through them, and a backward that needs a gradient
  there raises PyTorch's NotImplementedError (autograd/graph.py ``OpNode.apply``; its text
  names ``no_derivative_label``, by default ``"<name>: input"``); ``vjp`` returns None for
  them and ``jvp`` calls ``raise_no_derivative`` when given a tangent for one;
- ``c``: a C expression template for elementwise ops (``"expf({0})"``) or None when the C
  backend lowers the op with a rule of its own: other lowering rules are registered per
  renderer beside their code, keyed by this object (compiler/backends/c/rules.py);
- ``version``: part of the compile-cache key; bump it when any rule changes.

Example (the whole definition of ``neg``)::

    NEG = unary("neg", np.negative, vjp=lambda ctx, g: (-g,), jvp=lambda ctx, t: -t, c="(-{0})")
"""
from __future__ import annotations

import numpy as np

from ..autograd import forward_ad as _forward_ad
from ..autograd.graph import OpNode as _OpNode
from ..autograd.graph import raise_no_derivative  # noqa: F401  (the rules' error, re-exported for them)
from ..core import dtypes as _dt
from ..core import grad_state
from ..core import tracing as _trace
from ..core.tensor import Tensor as _Tensor

REGISTRY: dict[str, "OpDef"] = {}
_BF16 = _dt.bfloat16  # (ops on it run their NumPy kernels on float32: dtypes.widen_bfloat16)


class OpDef:
    def __init__(self, name, infer, impl, vjp=None, jvp=None, save=(), c=None, c_int=None,
                 differentiable=True, nondiff_inputs=(), version=1, kind="other", random=False,
                 sample=None, no_derivative=(), no_derivative_label=None, effect=False):
        self.name = name
        self.infer = infer
        self.impl = impl
        self.vjp = vjp
        self.jvp = jvp
        self.save = tuple(save)
        self.c = c
        self.c_int = c_int  # the C expression for integer dtypes, where it is not ``c`` (C's fmod is float's)
        self.differentiable = differentiable
        self.nondiff_inputs = frozenset(nondiff_inputs)  # e.g. index tensors
        self.no_derivative = frozenset(no_derivative)
        self.no_derivative_label = no_derivative_label or f"{name}: input"
        self.version = version
        self.kind = kind  # elementwise | reduce | movement | index | linalg | nn | other
        self.random = random  # draws random numbers (vmap's randomness= rule reads this)
        self.effect = effect  # acts outside the program (a collective): never folded, merged or split
        # a pure function of its inputs: what the passes may fold, merge (CSE) or recompute
        self.pure = not (random or effect)
        # sample() -> list of (input specs, attrs) for the registry-driven tests (tests/test_ops.py);
        # the spec grammar ("any", ("index", shape, high), ...) is in tracegrad/ops/samples.py
        self.sample = sample

    def __repr__(self):
        return f"<op {self.name}>"

    def __call__(self, *inputs, **attrs):  # (dispatch, inlined: one frame less on every op)
        if _profiler is not None:
            return _profiler.record_op(_dispatch, self, inputs, attrs)
        return _dispatch(self, *inputs, **attrs)


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    REGISTRY[op.name] = op
    return op


def defop(name, **kwargs) -> OpDef:
    return register(OpDef(name, **kwargs))


def dispatch(op: OpDef, *inputs, **attrs):
    """Run ``op`` on Tensors: eagerly with NumPy, or recorded into the active trace.
    Records an autograd Node when grad mode is on and an input requires grad."""
    if _profiler is not None:  # tg.autograd.profiler.profile is recording
        return _profiler.record_op(_dispatch, op, inputs, attrs)
    return _dispatch(op, *inputs, **attrs)


def _dispatch(op: OpDef, *inputs, **attrs):
    shape, dtype = op.infer(*inputs, **attrs)
    tracer = _trace.current_tracer()
    if tracer is not None:
        value = tracer.record(op, inputs, attrs, shape, dtype)
    elif _on_device is None or (value := _on_device(op, inputs, attrs, shape, dtype)) is None:
        # (NumPy, on the host: _on_device is None until a cuda tensor exists, then it declines
        # ops whose inputs are all on the CPU; core/placement.py)
        arrays = [t._value for t in inputs]
        if dtype is _BF16 or (inputs and inputs[0]._dtype is _BF16):  # (one test per op otherwise)
            arrays = _dt.widen_bfloat16(arrays)
        value = op.impl(*arrays, **attrs)
        if value.__class__ is not np.ndarray:
            value = np.asarray(value)
        if value.dtype != dtype.np:
            value = value.astype(dtype.np)
        if value.shape != shape and value.shape != tuple(shape):
            raise AssertionError(f"{op.name}: impl gave shape {value.shape}, infer said {shape}")
    out = _Tensor._make(value, dtype)
    if op.differentiable and dtype.category == 2 and grad_state.is_grad_enabled():
        skip = op.nondiff_inputs
        for i, t in enumerate(inputs):
            if t._requires_grad and i not in skip:
                _OpNode.attach(op, inputs, attrs, out)
                break
    if _forward_ad._active_level is not None:
        _forward_ad.propagate(op, inputs, attrs, out)
    return out


_profiler = None  # the profiler module while a profile is active (set by it)
_on_device = None  # core/placement.run once a cuda tensor exists (placement.activate)
