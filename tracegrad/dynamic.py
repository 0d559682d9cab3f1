"""``tg.compile(fn, dynamic=True)``: one Program object serves every batch size.

The leading dimension of every tensor argument is free: the guards check everything else
(dtypes, requires_grad, every other dimension, Python values, captured state), and the
function is captured once per distinct tuple of leading sizes behind this single object.

What this is, exactly: the IR and both backends still specialise on concrete shapes (ops infer
shapes on ints, ``mean`` folds its divisor, the C backend sizes loops and its workspace at
build time), so a :class:`DynamicProgram` keeps one built specialisation per batch signature
(the tuple of leading sizes) and dispatches to it. ``compiled.programs`` has one entry;
``DynamicProgram.specializations`` lists the per-batch Programs. A shape change outside the
leading dimension fails the relaxed guards and retraces a new DynamicProgram, as without
``dynamic``.

>>> import tracegrad as tg
>>> f = tg.compile(lambda x: (x * 2).sum(1), backend="interpreter", dynamic=True)
>>> [tuple(f(tg.ones(b, 3)).shape) for b in (2, 5)]
[(2,), (5,)]
>>> len(f.programs)
1
"""
from __future__ import annotations

from .tensor import Tensor

# per-batch specialisations kept behind one DynamicProgram; the oldest is dropped beyond this
MAX_SPECIALIZATIONS = 32


def batch_signature(flat_args):
    """The leading size of every tensor argument with at least one dimension (None otherwise)."""
    return tuple(x._value.shape[0] if isinstance(x, Tensor) and x._value.ndim else None
                 for x in flat_args)


class DynamicProgram:
    """A Program whose tensor arguments' leading dimensions are runtime sizes.

    ``template`` is the first specialisation captured; its guards, with leading dimensions
    freed, decide whether this object accepts a call. ``capture(flat_args)`` builds the
    specialisation for a new batch signature (it may raise trace.GraphBreak). Other
    attributes (``graph``, ``source``, ``forward``, ...) are those of the specialisation that
    ran last."""

    def __init__(self, template, flat_args, spec, capture, eager):
        self.template = template
        self._spec = spec  # the pytree structure of (args, kwargs), to rebuild them for capture
        self._capture = capture  # (args, kwargs) -> Program, or None after a graph break
        self._eager = eager  # the original function, for a batch size that cannot be captured
        self._specs = {batch_signature(flat_args): template}
        self._last = template
        self.calls = 0

    @property
    def specializations(self):
        """The per-batch-signature Programs built so far, oldest first."""
        return list(self._specs.values())

    def __getattr__(self, item):
        # only reached for attributes not defined here: delegate to the last one that ran
        if item.startswith("_"):
            raise AttributeError(item)
        return getattr(self._last, item)

    @property
    def guards(self):
        """The template's guards with every tensor argument's leading size written as B."""
        cap = self.template.capture
        out = self.template.guards
        names = cap.arg_names
        for i, g in enumerate(cap.arg_guards):
            if g[0] == "tensor" and len(g[1]):
                name = names[i] if i < len(names) else str(i)
                old = f"{name}: Tensor {g[2].short}{list(g[1])}"
                new = f"{name}: Tensor {g[2].short}[B{i}" + "".join(f", {d}" for d in g[1][1:]) + "]"
                out = [new + line[len(old):] if line.startswith(old) else line for line in out]
        return out

    def mismatch(self, flat_args, grad_enabled):
        """None when this program may run for these arguments, else why not."""
        cap = self.template.capture
        if grad_enabled != cap.grad_enabled:
            return f"grad mode changed to {grad_enabled}"
        if len(flat_args) != len(cap.arg_guards):
            return f"{len(flat_args)} arguments instead of {len(cap.arg_guards)}"
        for i, (x, g) in enumerate(zip(flat_args, cap.arg_guards)):
            reason = _relaxed_mismatch(x, g)
            if reason:
                return f"argument {cap.arg_names[i]}: {reason}"
        # captured state (parameters, Python globals, .grad presence) does not depend on the
        # batch: the template's state guards decide for every batch size
        for g in cap.state_guards:
            reason = _relaxed_state_mismatch(g, flat_args, cap)
            if reason:
                return reason
        spec = self._specs.get(batch_signature(flat_args))
        # a built specialisation also checks the exact shapes of .grad fields
        return spec.mismatch(flat_args, grad_enabled) if spec is not None else None

    def run(self, flat_args):
        """Run the specialisation for this batch signature, capturing it first if needed."""
        key = batch_signature(flat_args)
        spec = self._specs.get(key)
        if spec is None:
            from . import pytree

            from .compiler import _log

            args, kwargs = pytree.unflatten(self._spec, list(flat_args))
            _log("guards", "dynamic %s: specialising for leading sizes %s (%d built)",
                 self.template.graph.name, [k for k in key if k is not None], len(self._specs))
            spec = self._capture(args, kwargs)
            if spec is None:  # a graph break at this batch size (already warned): run eagerly
                return self._eager(*args, **kwargs)
            if len(self._specs) >= MAX_SPECIALIZATIONS:
                self._specs.pop(next(iter(self._specs)))
            self._specs[key] = spec
        self._last = spec
        self.calls += 1
        return spec.run(flat_args)

    def __str__(self):
        return str(self._last)


def _relaxed_mismatch(x, g):
    """Program's argument guard with a tensor's leading size free."""
    from .program import _arg_mismatch

    if g[0] != "tensor" or not isinstance(x, Tensor) or not len(g[1]) or x._value.ndim != len(g[1]):
        return _arg_mismatch(x, g)
    shape = x._value.shape
    if shape[1:] != g[1][1:] or x._dtype is not g[2] or x._requires_grad != g[3]:
        want = "[B" + "".join(f", {d}" for d in g[1][1:]) + "]"
        return (f"expected {g[2].short}{want} requires_grad={g[3]}, got "
                f"{x.dtype.short}{list(shape)} requires_grad={x.requires_grad}")
    return None


def _relaxed_state_mismatch(g, flat_args, cap):
    """Program's state guard, except that the shape of a .grad (an argument's .grad has the
    argument's batch size) is checked with its leading size free."""
    from .program import _real, _state_mismatch

    if g[0] != "grad_shape":
        return _state_mismatch(g, flat_args, cap)
    gr = _real(g[1], flat_args)._grad
    if gr is None or gr._dtype is not g[3] or gr._value.ndim != len(g[2]) \
            or gr._value.shape[1:] != tuple(g[2])[1:]:
        return f"{g[4]} changed"
    return None
