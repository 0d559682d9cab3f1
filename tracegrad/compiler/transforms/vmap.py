"""Batching rules: ``vmap``'s engine. The function is traced once on a single example (the
batch dim sliced away) into an IR graph, which is then replayed over the whole batch: every
node runs once, on batched tensors, through ``dispatch``, so autograd, forward AD and an
enclosing ``tg.compile`` trace see ordinary ops.

A replayed value is either *batched* (its batch dim first, size ``B``) or *unbatched* (the
same for every element: parameters, constants). A node with no batched input runs as traced.
Otherwise the op's rule below rewrites it: elementwise ops broadcast, reductions and
movements shift their dims past the batch dim, ``matmul`` aligns its operands, linalg ops
batch over their leading dims, and an op without a rule runs once per element
(``_per_element``), which is always correct, only slower.

Autograd follows the trace: the tracer notes, per node input, whether eager autograd would
have connected it (a ``detach()`` or a ``no_grad`` block inside the function leaves no op in
the graph, so the replay cuts there itself).

>>> import tracegrad as tg
>>> from tracegrad.func import vmap
>>> w = tg.ones(3, 2)
>>> vmap(lambda x: (x @ w).tanh().sum())(tg.zeros(4, 3))
tensor([0., 0., 0., 0.])
"""
from __future__ import annotations

from ...autograd import grad_mode
from ...autograd.graph import OpNode
from ..ir.graph import Value
from ..ir.trace import Tracer
from ...core.tensor import Tensor


class BatchTracer(Tracer):
    """A tracer that also records, per node, how eager autograd would link its inputs. A
    tensor of an enclosing trace (vmap inside ``tg.compile``) that the function reads without
    receiving it becomes an input of this graph, bound to that tensor, like a parameter."""

    def __init__(self, graph):
        super().__init__(graph)
        self.links = {}  # id(node output) -> (grad mode on, per input: autograd-connected)
        self._owned = set()  # ids of the Values of this graph
        self._leaves = None  # id(input Value) -> the tensor that is its autograd leaf
        self.custom_backward = False  # an autograd link into a custom Function's output

    def value_of(self, t):
        v = t._value
        if isinstance(v, Value) and id(v) not in self._owned:
            self._owned.update(id(x) for x in self.graph.inputs)
            if id(v) not in self._owned:
                return self._shadow.get(id(v)) or self._lift(t)
        return super().value_of(t)

    def _lift(self, t):
        value = super()._lift(t)
        self._owned.add(id(value))
        self._leaf_of().setdefault(id(value), t)
        return value

    def _leaf_of(self):
        if self._leaves is None:  # the arguments' symbolic tensors exist before any op runs
            self._leaves = {id(s._value): s for s in self.arg_symbol_tensors.values()}
        return self._leaves

    def record(self, op, inputs, attrs, shape, dtype):
        values = [self.value_of(t) for t in inputs]
        out = self.graph.add_node(op, values, attrs, shape, dtype)
        self._owned.add(id(out))
        on = grad_mode.is_grad_enabled()
        self.links[id(out)] = (on, tuple(on and self._connected(t, v) for t, v in zip(inputs, values)))
        return out

    def constant(self, array, dtype):
        value = super().constant(array, dtype)
        self._owned.add(id(value))
        return value

    def seed_input(self):
        value = super().seed_input()
        self._owned.add(id(value))
        return value

    def _connected(self, t, value):
        """Would eager autograd flow from this use of ``t`` (holding ``value``) back to where
        the value came from? Not through a ``detach()`` (a leaf over a computed value) or a
        fresh leaf made from an argument or a lifted tensor (``x.detach().requires_grad_()``)."""
        if not t._requires_grad:
            return False
        if t._grad_fn is not None:
            if not isinstance(t._grad_fn, OpNode):
                self.custom_backward = True
            return True
        return self._leaf_of().get(id(value)) is t


RANDOMNESS_ERROR = ("vmap: called random operation while in randomness error mode. Please either use "
                     "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                     "operation out of vmap")


class Unbatchable(Exception):
    """The function cannot be traced for batching; vmap runs it once per element instead."""


def vmap_call(func, leaves, spec, leaf_dims, kwargs, size, randomness):
    """``func`` over the batch: trace it on element 0, replay the graph batched. Returns
    (tensor, batched) per output leaf and the outputs' pytree spec; raises Unbatchable."""
    from ...core import pytree
    from ...core.creation import default_generator, tensor
    from ...core.dtypes import int64
    from ..ir.capture import trace_function
    from ...core.tracing import GraphBreak

    example = [x.select(d, 0) if d is not None else x for x, d in zip(leaves, leaf_dims)]
    try:
        cap = trace_function(func, pytree.unflatten(spec, example), kwargs, tracer_cls=BatchTracer)
    except GraphBreak as e:
        raise Unbatchable(f"it cannot be traced ({e})") from None
    if cap.writebacks or cap.actions:
        raise Unbatchable("it writes into tensors it did not create (in-place updates or .grad)")
    if cap.tracer.seed_inputs and randomness == "error":
        raise RuntimeError(RANDOMNESS_ERROR)
    flat = list(leaves) + pytree.flatten(kwargs)[0]
    dims = list(leaf_dims) + [None] * (len(flat) - len(leaves))
    inputs = []
    for b in cap.bindings:
        if b.kind == "arg":
            x, d = flat[b.ref], dims[b.ref]
            inputs.append((x.movedim(d, 0), True) if d is not None else (x, False))
        elif b.kind == "data":
            inputs.append((b.ref, False))
        elif b.kind == "grad":
            inputs.append((b.ref._grad, False))
        elif b.kind == "seed":
            inputs.append((tensor(default_generator.next_seed(), dtype=int64), False))
        else:
            raise Unbatchable(f"it reads the .grad of an argument ({b.kind})")
    if cap.tracer.custom_backward and grad_mode.is_grad_enabled() and any(t.requires_grad for t, _ in inputs):
        # its forward ran under no_grad, so the replay would give no gradient at all
        raise Unbatchable("it applies a custom autograd.Function to inputs that require grad, and the "
                          "batched replay would differentiate its forward's ops, not its backward")
    values = replay(cap.graph, cap.tracer.links, inputs, size, randomness)
    outs = []
    for kind, ref in cap.out_leaves:
        if kind == "value":
            outs.append(values[ref])
        elif kind == "arg":
            d = dims[ref]
            outs.append((flat[ref].movedim(d, 0), True) if d is not None else (flat[ref], False))
        else:
            check_output(ref)
            outs.append((ref, False))
    return outs, cap.out_spec


def check_output(leaf):
    if not isinstance(leaf, Tensor):
        raise ValueError(f"vmap: the function must only return Tensors, got type {type(leaf).__name__} "
                         "(as PyTorch's vmap)")


def replay(graph, links, inputs, size, randomness):
    """Run ``graph`` over a batch of ``size``: ``inputs`` are (tensor, batched) per graph input,
    a batched tensor with its batch dim first. Returns (tensor, batched) per graph output."""
    env = {}
    for v, entry in zip(graph.inputs, inputs):
        env[id(v)] = entry
    for n in graph.nodes:
        on, linked = links[id(n.out)]
        args = [_get(env, v) for v in n.inputs]
        args = [(t.detach() if not link and t._requires_grad else t, b) for (t, b), link in zip(args, linked)]
        with grad_mode.set_grad_enabled(on and grad_mode.is_grad_enabled()):
            env[id(n.out)] = _apply(n, args, size, randomness)
    return [_get(env, v) for v in graph.outputs]


def _get(env, v):
    entry = env.get(id(v))
    if entry is None:  # a constant or literal: made a tensor once per replay
        from ...core.creation import tensor

        entry = env[id(v)] = (tensor(v.data, dtype=v.dtype), False)
    return entry


def _apply(node, args, size, randomness):
    op, attrs = node.op, node.attrs
    if op.random and randomness == "different":
        return op(*[t for t, _ in args], **{**attrs, "shape": (size, *attrs["shape"])}), True
    if not any(b for _, b in args):
        return op(*[t for t, _ in args], **attrs), False
    rule = _RULES.get(op.name) or _KIND_RULES.get(op.kind, _per_element)
    out = rule(node, args, size)
    expected = (size, *node.out.shape)
    if tuple(out.shape) != expected:
        raise AssertionError(f"vmap: the batching rule of {op.name} gave shape {tuple(out.shape)}, "
                             f"expected {expected}")
    return out, True


# ----------------------------------------------------------------------------- helpers
def _batched(t, b, size):
    """``t`` with a leading batch dim (an unbatched tensor is expanded: a view, no copy)."""
    return t if b else t.unsqueeze(0).expand(size, *t.shape)


def _rank_to(t, b, ndim):
    """A batched ``t`` reshaped to ``ndim`` dims per element by leading 1s (broadcasting
    aligns dims from the right, so the batch dim must stay in front of all of them)."""
    if not b or t.ndim - 1 >= ndim:
        return t
    return t.reshape(t.shape[0], *([1] * (ndim - t.ndim + 1)), *t.shape[1:])


def _shift(dims, ndim):
    """Per-element dims (an int, a tuple or None) as dims of the batched tensor."""
    if dims is None:
        return None
    if isinstance(dims, int):
        return dims % ndim + 1 if ndim else 1
    return tuple(d % ndim + 1 for d in dims)


def _per_element(node, args, size):
    """The fallback: the op once per element, stacked."""
    from ..._api.functional import stack

    outs = [node.op(*[t.select(0, i) if b else t for t, b in args], **node.attrs) for i in range(size)]
    return stack(outs, 0)


# ----------------------------------------------------------------------------- rules
def _elementwise(node, args, size):
    ndim = len(node.out.shape)
    return node.op(*[_rank_to(t, b, ndim) for t, b in args], **node.attrs)


def _reduce(node, args, size):
    (t, _), attrs = args[0], dict(node.attrs)
    ndim = t.ndim - 1
    if "dim" in attrs and attrs["dim"] is None:  # argmax/argmin over everything
        out = node.op(t.reshape(size, -1), **{**attrs, "dim": 1, "keepdim": False})
        return out.reshape(size, *node.out.shape)
    if "dim" in attrs:
        attrs["dim"] = _shift(attrs["dim"], ndim)
    return node.op(t, **attrs)


def _dims_attr(name):
    def rule(node, args, size):
        (t, _), = args
        return node.op(t, **{**node.attrs, name: _shift(node.attrs[name], t.ndim - 1)})
    return rule


def _permute(node, args, size):
    (t, _), = args
    return node.op(t, dims=(0, *_shift(node.attrs["dims"], t.ndim - 1)))


def _reshape(node, args, size):
    (t, _), = args
    return node.op(t, shape=(size, *node.attrs["shape"]))


def _expand(node, args, size):
    (t, _), = args
    shape = node.attrs["shape"]
    return node.op(_rank_to(t, True, len(shape)), shape=(size, *shape))


def _slice(node, args, size):
    (t, _), = args
    return node.op(t, **{**node.attrs, "index": ((0, size, 1), *node.attrs["index"])})


def _unslice(node, args, size):
    (t, _), = args
    attrs = node.attrs
    return node.op(t, shape=(size, *attrs["shape"]), index=((0, size, 1), *attrs["index"]), **{
        k: v for k, v in attrs.items() if k not in ("shape", "index")})


def _cat(node, args, size):
    dim = _shift(node.attrs["dim"], len(node.out.shape))
    return node.op(*[_batched(t, b, size) for t, b in args], **{**node.attrs, "dim": dim})


def _all_batched_dim(node, args, size):
    """gather / scatter*: every operand batched, the dim shifted."""
    dim = _shift(node.attrs["dim"], len(node.inputs[0].shape))
    return node.op(*[_batched(t, b, size) for t, b in args], **{**node.attrs, "dim": dim})


def _index_like(node, args, size):
    """index / index_add / index_put: batched data with shared indices shift ``dim``; an
    unbatched table read at batched indices puts the indices' batch dim at ``dim``; batched
    indices into batched data are one op on the data with the batch folded into ``dim``
    (element b's indices offset by b times that dim's size)."""
    (x, bx), (idx, bi) = args[0], args[1]
    dim = node.attrs["dim"] % len(node.inputs[0].shape)
    if not bi:
        rest = [_batched(t, b, size) for t, b in args[2:]]
        return node.op(_batched(x, bx, size), idx, *rest, **{**node.attrs, "dim": dim + 1})
    if node.op.name == "index" and not bx:
        return node.op(x, idx, **node.attrs).movedim(dim, 0)
    from ...core.creation import arange

    x = _batched(x, bx, size).movedim(0, dim)  # (..., B, N, ...)
    n = x.shape[dim + 1]
    folded = x.reshape(*x.shape[:dim], size * n, *x.shape[dim + 2:])
    offsets = (arange(size, dtype=idx.dtype) * n).reshape(size, *([1] * (idx.ndim - 1)))
    rest = [_batched(t, b, size).movedim(0, dim) for t, b in args[2:]]  # (sources: B beside the index dims)
    out = node.op(folded, idx + offsets, *rest, **node.attrs)
    if node.op.name == "index":  # (..., B, *index shape, ...)
        return out.movedim(dim, 0)
    return out.reshape(*x.shape).movedim(dim, 0)


def _matmul(node, args, size):
    """Operands made at least 2-D per element (a vector gets a unit dim), batch ranks aligned;
    the result is reshaped to the traced shape. An unbatched matrix on the right stays 2-D, so
    a batch of vectors times a weight is one plain product."""
    (a, ba), (b, bb) = args
    na, nb = len(node.inputs[0].shape), len(node.inputs[1].shape)
    if ba and not bb and nb <= 2:
        return node.op(a, b).reshape(size, *node.out.shape)
    if ba and na == 1:
        a, na = a.unsqueeze(1), 2
    if bb and nb == 1:
        b, nb = b.unsqueeze(-1), 2
    rank = max(na, nb)
    out = node.op(_rank_to(a, ba, rank), _rank_to(b, bb, rank))
    return out.reshape(size, *node.out.shape)


# the dims of each operand that are not batch dims, where not 2 each (a matrix)
_CORE_RANKS = {"linalg_ldl_solve": (2, 1, 2), "lu_permutation": (1,)}


def _leading_batch(node, args, size):
    """Ops that already treat leading dims as a batch (linalg, the scans): the vmap dim leads
    every operand, followed by unit dims where an operand has fewer batch dims than another
    (batch dims broadcast from the right: the vmap dims must line up)."""
    operands = [_batched(t, b, size) for t, b in args]
    cores = _CORE_RANKS.get(node.op.name, (2,) * len(operands))
    ranks = [len(v.shape) - core for v, core in zip(node.inputs, cores)]
    for i, rank in enumerate(ranks):
        for _ in range(max(ranks) - rank):
            operands[i] = operands[i].unsqueeze(1)
    return node.op(*operands, **node.attrs)


def _merge_into_first(node, args, size):
    """Ops whose first dim is already a batch (unfold2d, fold2d): the vmap dim joins it."""
    (t, _), = args
    out = node.op(t.reshape(-1, *t.shape[2:]), **node.attrs)
    return out.reshape(size, *node.out.shape)


_KIND_RULES = {"elementwise": _elementwise, "reduce": _reduce, "linalg": _leading_batch}
_RULES = {
    "permute": _permute, "reshape": _reshape, "expand": _expand, "slice": _slice,
    "unslice": _unslice, "cat": _cat, "flip": _dims_attr("dims"), "argsort": _dims_attr("dim"),
    "gather": _all_batched_dim, "scatter": _all_batched_dim, "scatter_add": _all_batched_dim,
    "scatter_reduce": _all_batched_dim, "index": _index_like, "index_add": _index_like,
    "index_put": _index_like, "matmul": _matmul, "unfold2d": _merge_into_first,
    "fold2d": _merge_into_first,
}
