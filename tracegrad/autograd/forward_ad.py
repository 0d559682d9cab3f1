"""Forward-mode AD with dual tensors (mirrors ``torch.autograd.forward_ad``).

Inside ``dual_level()`` a tensor made by ``make_dual(primal, tangent)`` carries its tangent;
every op dispatched on it computes the output's tangent with the op's JVP rule
(``OpDef.jvp(ctx, *tangents)``), so ``unpack_dual(f(dual)).tangent`` is J·tangent.

>>> import tracegrad as tg
>>> import tracegrad.autograd.forward_ad as fwAD
>>> x = tg.tensor([1.0, 2.0])
>>> with fwAD.dual_level():
...     y = fwAD.make_dual(x, tg.ones(2)) ** 2
...     fwAD.unpack_dual(y).tangent
tensor([2., 4.])

Only one level at a time is supported, as in PyTorch. Tangents are stored on the tensor as
``_fw_grad = (level_state, tangent)`` and are all dropped when the level exits.
"""
from __future__ import annotations

import contextlib
import weakref
from typing import NamedTuple, Optional

from ..core import creation
from ..core import dtypes as _dt
from ..core.tensor import Tensor
from .grad_mode import _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

# The active level (an int) or None. ``registry.dispatch`` reads it on every op, so it stays a
# plain module global; ``_no_forward`` clears it while a JVP rule computes a tangent.
_active_level = None
_state = None  # the _LevelState of the active level (kept while _no_forward hides the level)


class _LevelState:
    """One forward-AD level: remembers the tensors given a tangent, to clear them at exit."""

    def __init__(self, level):
        self.level = level
        self.duals = []  # weakrefs to tensors holding a tangent of this level


# ----------------------------------------------------------------------------- levels
def enter_dual_level():
    """Enter a new forward grad level and return its index (always 0: no nesting)."""
    global _active_level, _state
    if _state is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _state = _LevelState(0)
    _active_level = 0
    return 0


def exit_dual_level(*, level=None):
    """Exit the current level, deleting every tangent associated with it."""
    global _active_level, _state
    current = -1 if _state is None else _state.level
    if level is None:
        level = current
    if level != current or _state is None:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    for ref in _state.duals:
        t = ref()
        if t is not None and t.__dict__.get("_fw_grad") is not None:
            t._fw_grad = None
    _state = None
    _active_level = None


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD; all dual-tensor computation happens inside it.

    >>> import tracegrad as tg
    >>> import tracegrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     out = fwAD.make_dual(tg.tensor([1.0]), tg.tensor([3.0])) * 2
    ...     fwAD.unpack_dual(out).tangent
    tensor([6.])
    >>> fwAD.unpack_dual(out).tangent is None  # deleted when the level exits
    True
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


@contextlib.contextmanager
def _no_forward():
    """Hide the active level: ops run inside (a JVP rule's own arithmetic) get no tangent."""
    global _active_level
    prev = _active_level
    _active_level = None
    try:
        yield
    finally:
        _active_level = prev


# ----------------------------------------------------------------------------- tangents
def _tangent(t):
    """The tangent ``t`` holds at the current level, or None."""
    fw = t.__dict__.get("_fw_grad")
    if fw is None or _state is None or fw[0] is not _state:
        return None
    return fw[1]


def compile_blocker(tensors, names):
    """Why ``tg.compile`` runs a call eagerly because a tensor it reads carries a tangent at the
    active dual level, or None. Programs are traced on plain symbolic tensors: the tangent would
    be dropped silently. (Dual tensors made inside the compiled function are traced fine.)"""
    if _state is None:
        return None
    for t, name in zip(tensors, names):
        if _tangent(t) is not None:
            return (f"{name} is a forward-AD dual tensor (make_dual): compiled programs do not "
                    "propagate the tangents of tensors passed in")
    return None


def _set_tangent(t, tangent):
    t._fw_grad = (_state, tangent)
    _state.duals.append(weakref.ref(t))


def _check_size(t, tangent):
    if tuple(tangent.shape) != tuple(t.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(t.shape)} while the given "
            f"forward gradient is of size {list(tangent.shape)}."
        )


def _current_level_or(level):
    current = -1 if _state is None else _state.level
    return current if level is None else level


def make_dual(tensor, tangent, *, level=None):
    """A new tensor aliasing ``tensor`` (differentiable in reverse mode) that carries
    ``tangent`` as its forward gradient at the current level."""
    from ..core.views import alias  # (lazy: a true cycle, the view rules stand above autograd)

    level = _current_level_or(level)
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make "
                           "sure to enter_dual_level() first.")
    if _state is None or level != _state.level:
        raise RuntimeError(f"Invalid forward AD level {level}: the only level is {_state.level}.")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if _tangent(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward "
                           f"gradient at the same level {level} is not supported.")
    _check_size(tensor, tangent)
    with _no_forward():
        dual = alias(tensor)
    _set_tangent(dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view without tangent) and the tangent."""

    primal: object
    tangent: Optional[object]


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of a dual tensor; tangent is None when it has none (or no level)."""
    from ..core.views import alias  # (lazy: as make_dual's)

    level = _current_level_or(level)
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    tangent = _tangent(tensor)
    with _no_forward():
        primal = alias(tensor)
    return UnpackedDualTensor(primal, tangent)


def copy_tangent(src, dst):
    """Give ``dst`` (an alias of ``src``, e.g. an unpacked saved output) ``src``'s tangent."""
    tangent = _tangent(src)
    if tangent is not None:
        _set_tangent(dst, tangent)


# ----------------------------------------------------------------------------- propagation
class JVPContext:
    """What a JVP rule sees (the same interface as graph.VJPContext): ``input(i)``, ``out``,
    ``shapes``, ``dtypes``, ``needs_input_grad`` (here: which inputs carry a tangent), and the
    op's attributes as attributes."""

    def __init__(self, inputs, attrs, out, tangents):
        self._inputs = inputs
        self._out = out
        self.attrs = attrs
        self.shapes = [tuple(t.shape) for t in inputs]
        self.dtypes = [t.dtype for t in inputs]
        self.needs_input_grad = tuple(t is not None for t in tangents)

    def input(self, i):
        return self._inputs[i]

    @property
    def out(self):
        return self._out

    def __getattr__(self, item):
        try:
            return self.__dict__["attrs"][item]
        except KeyError:
            raise AttributeError(item) from None


def _no_jvp_error(name):
    return NotImplementedError(f"Trying to use forward AD with {name} that does not support it "
                               "because it has not been implemented yet.")


def _as_input_dtype(tangent, ref):
    # make_dual keeps the tangent as given (PyTorch does too); rules get the primal's dtype
    if tangent is not None and tangent.dtype is not ref.dtype:
        tangent = tangent.to(ref.dtype)
    return tangent


def _fit(tangent, out, what):
    """A rule may return a broadcastable tangent (e.g. ``add`` with one dual input)."""
    if tuple(tangent.shape) != tuple(out.shape):
        # (lazy: a true cycle, the ops stand above autograd: the registry records its Nodes;
        # only a broadcast tangent comes here)
        from ..ops import helpers as H

        try:
            tangent = H.expand(tangent, tuple(out.shape))
        except RuntimeError:
            raise RuntimeError(f"{what} returned a tangent of shape {list(tangent.shape)} for an output "
                               f"of shape {list(out.shape)}") from None
    if tangent.dtype is not out.dtype:
        tangent = tangent.to(out.dtype)
    return tangent


def propagate(op, inputs, attrs, out):
    """Called by ``registry.dispatch`` for every op while a level is active."""
    if not op.differentiable or not out.dtype.is_floating_point:
        return
    tangents = [None if i in op.nondiff_inputs else _tangent(t) for i, t in enumerate(inputs)]
    if all(t is None for t in tangents):
        return
    if op.jvp is None:
        raise _no_jvp_error(op.name)
    ctx = JVPContext(inputs, attrs, out, tangents)
    with _no_forward():
        tangents = [_as_input_dtype(t, x) for t, x in zip(tangents, inputs)]
        tangent = op.jvp(ctx, *tangents)
        if tangent is None:
            return
        tangent = _fit(tangent, out, f"the jvp rule of {op.name}")
    _set_tangent(out, tangent)
    _share_with_saved_output(out, tangent)


def _share_with_saved_output(out, tangent):
    """An op that saved its own output saved a detached alias (see graph.SavedTensor); give the
    alias the tangent too, so that a backward run inside the level (forward-over-reverse)
    propagates tangents through that saved value."""
    node = out._grad_fn
    saved = getattr(node, "saved", None) if node is not None else None
    entry = saved.get("out") if isinstance(saved, dict) else None
    if entry is not None and entry.tensor is not None:
        _set_tangent(entry.tensor, tangent)


def function_jvp(fn_cls, ctx, inputs, outputs):
    """Forward mode for a custom ``Function``: called by ``Function.apply`` after ``forward``
    (only needed when ``_active_level is not None``). ``inputs`` are the arguments given to
    ``apply`` (non-tensors get a None tangent), ``outputs`` the tuple of forward outputs; the
    outputs receive the tangents returned by ``fn_cls.jvp(ctx, *tangents)``."""
    if _active_level is None:
        return
    tangents = [_tangent(a) if isinstance(a, Tensor) else None for a in inputs]
    if all(t is None for t in tangents):
        return
    jvp = getattr(fn_cls, "jvp", None)
    if jvp is None:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function "
                                  "to use it with forward mode AD.")
    with _no_forward():
        tangents = [_as_input_dtype(t, a) if t is not None else None for t, a in zip(tangents, inputs)]
        if getattr(ctx, "materialize_grads", False):  # ctx.set_materialize_grads covers jvp too
            tangents = [creation.zeros_like(a) if t is None and isinstance(a, Tensor) else t
                        for t, a in zip(tangents, inputs)]
        result = jvp(ctx, *tangents)
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outputs):
        raise RuntimeError("Function's jvp returned an invalid number of forward gradients (expected "
                           f"{len(outputs)} but got {len(result)})")
    for out, tangent in zip(outputs, result):
        if tangent is None or not isinstance(out, Tensor) or not out.dtype.is_floating_point:
            continue
        if not isinstance(tangent, Tensor):
            raise TypeError(f"Function's jvp must return Tensors or None, got {type(tangent).__name__}")
        _check_size(out, tangent)
        with _no_forward():
            tangent = _fit(tangent, out, f"{fn_cls.__name__}.jvp")
        _set_tangent(out, tangent)


def on_assign(t, result):
    """An in-place write ``t <- result`` inside a level: ``t`` takes ``result``'s tangent, and when
    ``t`` is a view its base's tangent is updated in the written region (zeros elsewhere if the
    base had none), as in PyTorch. A view with a tangent of its own over a base without one
    (``make_dual``'s result) keeps it to itself, as in PyTorch. Other views of that base keep
    the tangent they had."""
    # (lazy: a true cycle, the ops stand above autograd: the registry records its Nodes)
    from ..ops import helpers as H

    tangent = _tangent(result)
    base = t._base
    base_tangent = None if base is None else _tangent(base)
    if base is None or (base_tangent is None and _tangent(t) is not None):
        if tangent is not None or _tangent(t) is not None:
            _set_tangent(t, tangent)
        return
    if tangent is None and base_tangent is None:
        return
    with _no_forward():
        view_tangent = tangent if tangent is not None else creation.zeros_like(t)
        view_tangent = _fit(view_tangent, t, "an in-place op")
        if base_tangent is None:
            base_tangent = creation.zeros_like(base)
        if t._view_inv is not None:
            mask = t._view_inv(creation.ones_like(t, dtype=_dt.bool_))
            base_tangent = H.where(mask, t._view_inv(view_tangent), _as_input_dtype(base_tangent, base))
    _set_tangent(base, base_tangent)
    _set_tangent(t, view_tangent)
