"""``tg.utils.checkpoint`` (PyTorch's ``torch.utils.checkpoint``): activation checkpointing,
memory traded for compute. A checkpointed function keeps none of its intermediate values for
the backward pass; the backward runs it again to get them.

- ``use_reentrant=False`` (recommended, as in PyTorch): the forward runs under
  ``saved_tensors_hooks`` that keep a number instead of each saved tensor; the first unpack in
  the backward re-runs the function (same random state) and hands out its saved tensors in
  the same order. Works with ``backward()``, ``autograd.grad`` and keyword arguments.
- ``use_reentrant=True`` (PyTorch's default when it is not given, with the same warning): an
  ``autograd.Function`` whose backward re-runs the function and calls ``backward`` inside;
  like PyTorch's, it refuses ``autograd.grad`` and ``backward(inputs=...)``.

Inside ``tg.compile`` the function is traced as it is: the compiled program's own partitioner
decides which values the backward keeps, and what checkpointing saves there is moot.

>>> import tracegrad as tg
>>> from tracegrad.utils.checkpoint import checkpoint
>>> w = tg.ones(3, requires_grad=True)
>>> y = checkpoint(lambda x: (x * w).tanh(), tg.ones(3), use_reentrant=False).sum()
>>> y.backward()
>>> w.grad
tensor([0.4200, 0.4200, 0.4200])
"""
from __future__ import annotations

import contextlib
import warnings

from ..autograd import engine
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.saved_hooks import saved_tensors_hooks
from ..core import tracing as trace
from ..core.random import get_rng_state, set_rng_state
from ..core.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "noop_context_fn", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The re-run of a checkpointed function saved different tensors than its first run."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check="default",
               debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, keeping none of its intermediate values for the backward
    (it is run again there). ``preserve_rng_state=True`` (a keyword) replays its random draws;
    ``context_fn`` returns two context managers, entered around the first run and the re-run."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended; without it, use_reentrant=True is used, as in "
                      "PyTorch.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if trace.current_tracer() is not None:
        forward_ctx, _ = context_fn()
        with forward_ctx:
            return function(*args, **kwargs)
    if use_reentrant:
        return _ReentrantCheckpoint.apply(function, preserve, *args)
    return _checkpoint_with_hooks(function, args, kwargs, preserve, context_fn, determinism_check)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """A sequence of functions (or an ``nn.Sequential``) run in ``segments`` chunks, each but
    the last checkpointed."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
                      "passed explicitly. use_reentrant=False is recommended.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start:end + 1]
        input = checkpoint(lambda x, chunk=chunk: _run_all(chunk, x), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return _run_all(functions[end + 1:], input)


def _run_all(functions, x):
    for f in functions:
        x = f(x)
    return x


# ----------------------------------------------------------------------------- use_reentrant=False
def _checkpoint_with_hooks(function, args, kwargs, preserve, context_fn, determinism_check):
    forward_ctx, recompute_ctx = context_fn()
    rerun = _Rerun(function, args, kwargs, get_rng_state() if preserve else None, recompute_ctx,
                   determinism_check != "none")

    def pack(t):
        rerun.shapes.append((tuple(t.shape), t.dtype))
        return len(rerun.shapes) - 1

    with saved_tensors_hooks(pack, rerun.saved), forward_ctx:
        return function(*args, **kwargs)


class _Rerun:
    """The second run of a checkpointed function, made on the first unpack of the backward;
    its saved tensors are handed out by position."""

    def __init__(self, function, args, kwargs, rng_state, context, check):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng_state, self.context, self.check = rng_state, context, check
        self.shapes = []  # (shape, dtype) of each tensor the first run saved
        self.values = None

    def saved(self, position):
        if self.values is None:
            self.values = self._run()
        return self.values[position]

    def _run(self):
        values = []

        def keep(t):
            values.append(t)
            return len(values) - 1

        args = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a for a in self.args]
        with _rng_replayed(self.rng_state), enable_grad(), self.context, \
                saved_tensors_hooks(keep, lambda k: values[k]):
            self.function(*args, **self.kwargs)
        if self.check:
            again = [(tuple(t.shape), t.dtype) for t in values]
            if len(again) < len(self.shapes) or again[:len(self.shapes)] != self.shapes:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the tensors saved for backward differ "
                    f"from the original forward: {len(self.shapes)} saved first, {len(again)} when "
                    "recomputed, or with other shapes or dtypes. Is the function deterministic (pass "
                    "preserve_rng_state=True for random ops)?")
        return values


@contextlib.contextmanager
def _rng_replayed(state):
    """Inside: the global random state as it was at the first run (when one was kept);
    after: as it was before."""
    if state is None:
        yield
        return
    now = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(now)


# ----------------------------------------------------------------------------- use_reentrant=True
class _ReentrantCheckpoint(Function):
    @staticmethod
    def forward(ctx, function, preserve, *args):
        ctx.function = function
        ctx.rng_state = get_rng_state() if preserve else None
        ctx.positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.positions])
        with no_grad():
            return function(*args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not engine.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an "
                "`inputs` parameter to .backward(). To resolve this error, you can either set "
                "use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        args = list(ctx.others)
        for i, t in zip(ctx.positions, ctx.saved_tensors):
            args[i] = t.detach().requires_grad_(t.requires_grad)
        with _rng_replayed(ctx.rng_state), enable_grad():
            outputs = ctx.function(*args)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        engine.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in args)
