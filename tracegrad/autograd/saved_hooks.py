"""Hooks for saved tensors (mirrors ``torch.autograd.graph``): ``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks`` and ``allow_mutation_on_saved_tensors``.

``graph.SavedTensor`` asks ``current_hooks()`` for the innermost (pack, unpack) pair whenever a
node saves a tensor; a pack hook's exception therefore surfaces in the forward pass, an
unpack hook's in the backward pass, as in PyTorch.

>>> import tracegrad as tg
>>> from tracegrad.autograd.graph import saved_tensors_hooks
>>> packed = []
>>> a = tg.ones(3, requires_grad=True)
>>> with saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
...     y = (a * a).sum()
>>> len(packed)
2
"""
from __future__ import annotations

import threading
import weakref

from ..core import tracing as trace
from . import grad_mode

class _State(threading.local):
    """Per thread: ``stack`` of (pack, unpack) pairs and the ``disabled`` error message. The
    class attributes are a new thread's values (read on every op that saves a tensor and on
    every compiled call: found without the exception a missing thread-local attribute costs)."""

    stack = None
    disabled = None


_state = _State()


def _stack():
    stack = _state.stack
    if stack is None:
        stack = _state.stack = []
    return stack


def _disabled_message():
    return _state.disabled


PACK_INPLACE_MESSAGE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)


def current_hooks():
    """The innermost (pack, unpack) pair, or None. Raises the message given to
    ``disable_saved_tensors_hooks`` when hooks are used while disabled."""
    stack = _state.stack
    if not stack:
        return None
    message = _disabled_message()
    if message is not None:
        raise RuntimeError(message)
    pack, unpack = stack[-1]
    if not getattr(pack, "_tg_transparent", False):
        trace.graph_break(CUSTOM_HOOKS_REASON)  # a no-op unless tg.compile is tracing
    return _checked_pack(pack), unpack


CUSTOM_HOOKS_REASON = (
    "saved_tensors_hooks are active: their pack/unpack hooks are arbitrary Python that a compiled "
    "program cannot run on the tensors it saves (save_on_cpu is transparent and compiles)")


def compile_blocker():
    """Why ``tg.compile`` must run a call eagerly under the current saved-tensor hooks, or None.

    A compiled program keeps its saved values itself, so hooks are only safe to ignore when they
    are transparent (``save_on_cpu`` on the CPU). Checked at every call, not just when tracing,
    because a program traced without hooks is reused when hooks are entered later."""
    stack = _state.stack
    if not stack:
        return None
    if _disabled_message() is not None:
        return ("saved-tensor hooks are active inside disable_saved_tensors_hooks (eager raises "
                "its message when a tensor is saved)")
    if all(getattr(pack, "_tg_transparent", False) for pack, _ in stack):
        return None
    return CUSTOM_HOOKS_REASON


def _checked_pack(pack):
    def checked(tensor):
        version = tensor._version
        # ops inside the hook may save tensors themselves: they must not re-enter the hook
        stack, _state.stack = _stack(), []
        try:
            packed = pack(tensor)
        finally:
            _state.stack = stack
        if tensor._version != version:
            raise RuntimeError(PACK_INPLACE_MESSAGE)
        return packed

    return checked


def output_for_pack(detached, node, output_nr):
    """What a pack hook receives for an op's own output: an alias carrying the node as its
    grad_fn (``graph.SavedTensor`` otherwise keeps outputs detached to avoid a cycle)."""
    alias = detached.detach()
    alias._requires_grad = True
    alias._grad_fn = node
    alias._output_nr = output_nr
    return alias


class saved_tensors_hooks:
    """Context manager setting a pair of pack / unpack hooks for saved tensors.

    ``pack_hook(tensor) -> Any`` runs whenever an operation saves a tensor for backward; what it
    returns is stored instead of the tensor. ``unpack_hook(Any) -> Tensor`` runs when backward
    needs the value. When nested, only the innermost pair applies."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = _disabled_message()
        if message is not None:
            raise RuntimeError(message)
        _stack().append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _stack().pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward. tracegrad
    tensors live on the CPU, so packing keeps the tensor itself and no copy is made."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            _device, tensor = packed
            return tensor

        # no copy and no side effect: tg.compile may ignore this pair (see compile_blocker)
        pack_to_cpu._tg_transparent = True

        super().__init__(pack_to_cpu, unpack_from_cpu)
        self.pin_memory = pin_memory
        self.device_type = device_type


class disable_saved_tensors_hooks:
    """Context manager under which using saved-tensor hooks raises ``RuntimeError(error_message)``.

    >>> import tracegrad as tg
    >>> with disable_saved_tensors_hooks("hooks are disabled"):
    ...     with save_on_cpu():
    ...         pass
    Traceback (most recent call last):
    RuntimeError: hooks are disabled
    """

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _disabled_message()
        _state.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _state.disabled = self.prev


# ----------------------------------------------------------------------------- mutation of saved tensors
# The active _AllowMutationOnSavedContext (global like PyTorch's flag); views.assign checks it
# before every in-place write and calls before_inplace.
mutation_ctx = None

ALLOW_MUTATION_OUTSIDE_MESSAGE = (
    "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
    "in which the graph was originally recorded."
)


class _Handle:
    """What the pack hook stores for one saved tensor (weakly referenced by the context)."""

    __slots__ = ("__weakref__",)


class _AllowMutationOnSavedContext:
    """The state of ``allow_mutation_on_saved_tensors``: the originals of saved tensors, the
    clones taken before a mutation, and an index from storage (the version counter shared by a
    tensor, its views and its detached aliases) to the handles saved from it."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()  # handle -> saved tensor
        self.cloned = weakref.WeakKeyDictionary()  # handle -> clone made before a mutation
        self.by_storage = {}  # id(version counter) -> (counter, WeakSet of handles)

    def pack(self, tensor):
        handle = _Handle()
        self.original[handle] = tensor
        entry = self.by_storage.get(id(tensor._vc))
        if entry is None:
            entry = self.by_storage[id(tensor._vc)] = (tensor._vc, weakref.WeakSet())
        entry[1].add(handle)
        return handle

    def unpack(self, handle):
        if mutation_ctx is not self:
            raise AssertionError(ALLOW_MUTATION_OUTSIDE_MESSAGE)
        if handle in self.cloned:
            return self.cloned[handle]
        if handle not in self.original:
            raise AssertionError(ALLOW_MUTATION_OUTSIDE_MESSAGE)
        return self.original[handle]

    def clone_before_write(self, t):
        entry = self.by_storage.get(id(t._vc))
        if entry is None:
            return
        for handle in list(entry[1]):
            if handle in self.cloned or handle not in self.original:
                continue
            with grad_mode.no_grad():
                self.cloned[handle] = self.original[handle].detach().clone()
            del self.original[handle]

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self.by_storage.clear()


def before_inplace(t):
    """Called by ``views.assign`` right before ``t``'s storage is written."""
    if mutation_ctx is not None:
        mutation_ctx.clone_before_write(t)


class allow_mutation_on_saved_tensors:
    """Context manager under which tensors saved for backward may be mutated in place: the saved
    value is cloned just before the first mutation, so backward still sees the original. Run
    both forward and backward inside the same context.

    >>> import tracegrad as tg
    >>> with allow_mutation_on_saved_tensors():
    ...     a = tg.ones(2, 3, requires_grad=True)
    ...     b = a.clone()
    ...     out = (b ** 2).sum()
    ...     _ = b.sin_()
    ...     out.sum().backward()
    >>> a.grad
    tensor([[2., 2., 2.],
            [2., 2., 2.]])
    """

    def __enter__(self):
        global mutation_ctx
        if mutation_ctx is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        self.ctx = _AllowMutationOnSavedContext()
        self._hooks = saved_tensors_hooks(self.ctx.pack, self.ctx.unpack)
        self._hooks.__enter__()
        mutation_ctx = self.ctx
        return self.ctx

    def __exit__(self, *exc):
        global mutation_ctx
        self._hooks.__exit__(*exc)
        mutation_ctx = None
        self.ctx.clear()
