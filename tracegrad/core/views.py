"""Views and in-place writes: the rules that keep a base tensor, its views and the autograd
graph consistent (PyTorch's view + inplace semantics), in eager mode and while tracing.

A view remembers its root ``_base``, ``_view_fn`` (base -> view, made of tracegrad ops) and
``_view_inv`` (view-shaped tensor -> base-shaped tensor, zero outside the view). Writing into
a view rebases the base's history as ``where(mask, inv(new_view), old_base)``, which is made of
ordinary differentiable ops, so gradients and traces need no special machinery.
"""
from __future__ import annotations

import numpy as np

from . import creation
from . import dtypes as _dt
from ..autograd import forward_ad, grad_mode, saved_hooks
from ..autograd.function import check_custom_function_view
from ..autograd.graph import AccumulateGrad
from ..ops import helpers as H
from ..ops.movement import RESHAPE
from . import tracing as trace
from .tensor import Tensor, VersionCounter


def make_view(out, src, view_fn, inv_fn):
    """Mark ``out`` (computed from ``src`` by ``view_fn``) as a view sharing src's storage."""
    if src._base is not None:
        outer_fn, outer_inv = src._view_fn, src._view_inv
        root = src._base
        fn = lambda b: view_fn(outer_fn(b))
        inv = None if inv_fn is None or outer_inv is None else (lambda r: outer_inv(inv_fn(r)))
    else:
        root, fn, inv = src, view_fn, inv_fn
    out._base = root
    out._view_fn = fn
    out._view_inv = inv
    out._vc = root._vc
    out._view_seen = root._vc.value
    out._traced_seen = root._vc.value
    return out


def alias(x):
    """A view of ``x`` with the same shape (``x.view(x.shape)``, ``contiguous()`` of a
    contiguous tensor, forward AD's ``make_dual``)."""
    return make_view(RESHAPE(x, shape=tuple(x.shape)), x, _same, _same)


def _same(t):
    return t


def check_inplace_target(t):
    if t._custom_function_view:
        check_custom_function_view(t)
    if t.is_leaf and t.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if t._base is not None and t._base.is_leaf and t._base.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    if getattr(t, "_inference", False) and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.")


def _cast_result(t, result):
    if tuple(result.shape) != tuple(t.shape):
        raise RuntimeError(
            f"output with shape {list(t.shape)} doesn't match the broadcast shape {list(result.shape)}"
        )
    if result.dtype is not t.dtype:
        _dt.check_can_cast(result.dtype, t.dtype)
        result = result.to(t.dtype)
    return result


def assign(t, result):
    """Make tensor ``t`` hold ``result`` in place: the value (through views into the base's
    storage), the version counter and the autograd history. Returns ``t``."""
    check_inplace_target(t)
    if t._base is not None and t._view_inv is None:
        raise RuntimeError(_OVERLAP_MESSAGE)  # an expanded view: several elements, one location
    result = _cast_result(t, result)
    if saved_hooks.mutation_ctx is not None:  # allow_mutation_on_saved_tensors: clone before write
        saved_hooks.before_inplace(t)
    tracer = trace.current_tracer()
    base = t._base
    needs_graph = grad_mode.is_grad_enabled() and (
        result.requires_grad or t.requires_grad or (base is not None and base.requires_grad))
    if base is not None and (needs_graph or tracer is not None):
        _rebase_through_view(t, base, result, tracer)
    elif tracer is not None:
        tracer.assign(t, result)
        t._bump_version()
    else:
        np.copyto(t._value, result._value)
        t._bump_version()
    if base is None:
        if needs_graph and result.requires_grad:
            t._grad_fn, t._output_nr, t._requires_grad = result._grad_fn, result._output_nr, True
            t._register_retain_grad()  # retain_grad follows the tensor's newest history
        elif needs_graph:
            t._grad_fn, t._requires_grad = None, t.is_leaf and t._requires_grad
    if forward_ad._active_level is not None:  # the written tensor takes the result's tangent
        forward_ad.on_assign(t, result)
    return t


_OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.")


def _rebase_through_view(view, base, result, tracer):
    if view._view_inv is None:
        raise RuntimeError(_OVERLAP_MESSAGE)
    old_base = base.detach() if not base.requires_grad else _history_alias(base)
    mask = view._view_inv(creation.ones_like(result, dtype=_dt.bool_))
    new_base = H.where(mask, view._view_inv(result), old_base)
    if tracer is not None:
        tracer.assign(base, new_base)
    else:
        np.copyto(view._value, result._value)
    base._bump_version()
    if grad_mode.is_grad_enabled() and new_base.requires_grad:
        base._grad_fn, base._output_nr, base._requires_grad = new_base._grad_fn, new_base._output_nr, True
        base._register_retain_grad()
    view._view_seen = -1  # forces the view's grad_fn to be re-derived from the base
    if grad_mode.is_grad_enabled() and new_base.requires_grad:
        view._refresh_view_graph()


def _history_alias(t):
    """A tensor sharing ``t``'s storage and current autograd history (not its future one)."""
    a = Tensor._make(t._value, t._dtype)
    a._vc = t._vc
    a._requires_grad, a._grad_fn, a._output_nr = t._requires_grad, t._grad_fn, t._output_nr
    a._acc_node = None
    if t.is_leaf:
        a._acc_node = t._acc_node if t._acc_node is not None else None
        if a._acc_node is None:
            AccumulateGrad.of(t)
            a._acc_node = t._acc_node
    return a


def _inplace_source(self, *others):
    """The operand an in-place method computes from (see ``_inplace_operand``), carrying
    ``self``'s forward-mode tangent so that an in-place op on a dual tensor updates its tangent.
    Used by every in-place method (_api/tensor_inplace.py) and by ops.index's and
    ops.scatter's index_add_/scatter_ (which is why it lives here, below both)."""
    src = _inplace_operand(self, *others)
    if forward_ad._active_level is not None:
        forward_ad.copy_tangent(self, src)
    return src


def _inplace_operand(self, *others):
    """The operand to compute from: a private copy when autograd records the op, so that the
    node saves the pre-update value (PyTorch's original_self) while ``self`` changes."""
    records = grad_mode.is_grad_enabled() and (
        self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
    if not records or self._is_traced:
        return _history_alias(self) if records else self.detach()
    alias = _history_alias(self)
    alias._value = alias._value.copy()
    alias._vc = VersionCounter()
    return alias
