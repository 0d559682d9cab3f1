"""``tg.func`` (PyTorch's ``torch.func``): function transforms built on tracegrad's autograd.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` return
functions and compose (``grad(grad(f))``, ``vmap(grad(f))``); ``functional_call`` runs a module
with other parameters and buffers; ``stack_module_state`` stacks the states of identical
modules for ``vmap``.

``vmap`` traces the function once, on one element, and replays its graph over the whole batch
with batching rules (``tracegrad.compiler.transforms.vmap``); a function that cannot be traced runs once per
element, with a warning. ``randomness="error"`` raises when the function draws random numbers,
``"same"`` gives every element the same draws, ``"different"`` its own.

>>> import tracegrad as tg
>>> from tracegrad.func import grad, vmap
>>> grad(lambda x: (x ** 3).sum())(tg.tensor([1.0, 2.0]))
tensor([ 3., 12.])
>>> vmap(grad(lambda x: (x ** 3).sum()))(tg.tensor([[1.0], [2.0]]))
tensor([[ 3.],
        [12.]])

Per-sample gradients of a model:

>>> model = tg.nn.Linear(3, 1)
>>> params = {k: v.detach() for k, v in model.named_parameters()}
>>> def loss(params, x):
...     return tg.func.functional_call(model, params, (x,)).square().sum()
>>> per_sample = vmap(grad(loss), in_dims=(None, 0))(params, tg.ones(5, 3))
>>> tuple(per_sample["weight"].shape)
(5, 1, 3)
"""
from __future__ import annotations

import functools
import warnings

from .compiler.transforms import vmap as batching
from .core import creation
from ._api import functional as F
from .core import pytree
from .autograd import forward_ad as fwAD
from .autograd.engine import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .core.tensor import Tensor

__all__ = ["functional_call", "stack_module_state", "grad", "grad_and_value", "vjp", "jvp", "jacrev",
           "jacfwd", "hessian", "vmap", "linearize", "functionalize", "replace_all_batch_norm_modules_"]


# ----------------------------------------------------------------------------- modules
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """``module(*args, **kwargs)`` with the parameters and buffers named in the dict (or dicts)
    in place of its own, which are restored afterwards. Tied weights (one tensor under two
    names) follow a replacement of either name when ``tie_weights``. ``strict``: every
    parameter and buffer must be given."""
    dicts = parameter_and_buffer_dicts
    replacements = {}
    for d in (dicts if isinstance(dicts, (list, tuple)) else [dicts]):
        for name, value in d.items():
            if name in replacements:
                raise ValueError(f"{name} appeared in multiple dictionaries; behavior of functional "
                                 "call is ambiguous")
            replacements[name] = value
    own = dict(module.named_parameters(remove_duplicate=False))
    own.update(module.named_buffers(remove_duplicate=False))
    unknown = [n for n in replacements if n not in own]
    if strict:
        missing = [n for n in own if n not in replacements]
        if missing or unknown:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}: missing "
                               f"keys {missing}, unexpected keys {unknown}")
    if tie_weights:  # every name of a replaced tensor takes the replacement
        for name, tensor in own.items():
            twin = next((r for r in replacements if r in own and own[r] is tensor), None)
            if twin is not None and name not in replacements:
                replacements[name] = replacements[twin]
    saved = []
    try:
        for name, value in replacements.items():
            owner, attr, table = _slot(module, name)
            saved.append((table, attr, table.get(attr), attr in table))
            table[attr] = value
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old, existed in reversed(saved):
            if existed:
                table[attr] = old
            else:
                table.pop(attr, None)


def _slot(module, name):
    """(the submodule, the attribute, the table it lives in) for a dotted ``name``."""
    *path, attr = name.split(".")
    owner = module
    for part in path:
        owner = owner._modules[part] if part in owner._modules else getattr(owner, part)
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            return owner, attr, table
    # (a name the module does not have: set as a buffer while the call runs, as PyTorch does)
    return owner, attr, owner._buffers


def stack_module_state(models):
    """``(params, buffers)``: dicts of each parameter and buffer of the identical ``models``
    stacked along a new leading dim (the parameters detached, then requiring grad)."""
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    params = {name: F.stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_()
              for name, _ in models[0].named_parameters()}
    buffers = {name: F.stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


# ----------------------------------------------------------------------------- reverse mode
def _argnums_tuple(argnums, n_args, fn_name):
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{fn_name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or not -n_args <= a < n_args:
            raise RuntimeError(f"{fn_name}: Got argnums={argnums}, but only {n_args} positional inputs")
    return tuple(a % n_args for a in nums)


def _track(x):
    """A tensor to differentiate with respect to: the input itself as a fresh leaf, or, when it
    already carries a graph (an outer transform differentiates it), an alias in that graph."""
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        raise TypeError(f"expected the differentiated arguments to be floating point Tensors, got "
                        f"{type(x).__name__ if not isinstance(x, Tensor) else x.dtype}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_()


def _split_aux(out, has_aux, fn_name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn_name}(f, ...)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def _detach_tree(tree, keep_graph):
    leaves, spec = pytree.flatten(tree)
    return pytree.unflatten(spec, [x if keep_graph or not isinstance(x, Tensor) else x.detach()
                                   for x in leaves])


def grad_and_value(func, argnums=0, has_aux=False):
    """``(gradient, value)`` of a function returning a scalar Tensor: the gradient with respect
    to the argument ``argnums`` (a pytree of Tensors: a Tensor, tuple, dict ...; or a tuple of
    argument numbers); with ``has_aux`` ``func`` returns ``(value, aux)`` and this
    ``(gradient, (value, aux))``."""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad_and_value")
        outer = any(isinstance(x, Tensor) and x.requires_grad
                    for a in nums for x in pytree.flatten(args[a])[0])
        args = list(args)
        trees = []
        with enable_grad():
            for a in nums:
                leaves, spec = pytree.flatten(args[a])
                leaves = [_track(x) for x in leaves]
                trees.append((leaves, spec))
                args[a] = pytree.unflatten(spec, leaves)
            value, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(value, Tensor) or value.numel() != 1:
                got = (f"tensor with {value.ndim} dims" if isinstance(value, Tensor) else type(value).__name__)
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                                   f"Tensor, got {got}. Maybe you wanted to use the vjp or jacrev APIs instead?")
            flat = [x for leaves, _ in trees for x in leaves]
            if value.requires_grad:
                grads = _autograd_grad(value, flat, create_graph=outer, allow_unused=True)
            else:  # (a value that does not depend on the inputs: zero gradients, as PyTorch's)
                grads = [None] * len(flat)
        grads = [g if g is not None else creation.zeros_like(x) for g, x in zip(grads, flat)]
        out, k = [], 0
        for leaves, spec in trees:
            out.append(pytree.unflatten(spec, grads[k:k + len(leaves)]))
            k += len(leaves)
        gradient = out[0] if isinstance(argnums, int) else tuple(out)
        value = value if outer else value.detach()
        return gradient, (value, _detach_tree(aux, outer)) if has_aux else value

    return wrapped


def grad(func, argnums=0, has_aux=False):
    """The gradient of ``func`` (a function returning a scalar Tensor) with respect to its
    argument ``argnums``; see ``grad_and_value``. ``grad(grad(f))`` differentiates again."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        gradient, value = gv(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapped


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives the tuple of the primals'
    cotangents (vector-Jacobian products); it may be called more than once."""
    outer = any(isinstance(x, Tensor) and x.requires_grad for p in primals for x in pytree.flatten(p)[0])
    with enable_grad():
        trees = [pytree.flatten(p) for p in primals]
        tracked = [([_track(x) for x in leaves], spec) for leaves, spec in trees]
        out, aux = _split_aux(func(*[pytree.unflatten(spec, leaves) for leaves, spec in tracked]),
                              has_aux, "vjp")
    out_leaves, out_spec = pytree.flatten(out)
    flat = [x for leaves, _ in tracked for x in leaves]

    def vjp_fn(*cotangents):
        cot = cotangents[0] if len(cotangents) == 1 and not isinstance(out, tuple) else cotangents
        cot_leaves, cot_spec = pytree.flatten(cot)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree "
                               f"structure of outputs to the function ({len(out_leaves)} tensors), "
                               f"got {len(cot_leaves)}")
        with enable_grad():
            grads = _autograd_grad(out_leaves, flat, cot_leaves, retain_graph=True, create_graph=outer,
                                   allow_unused=True)
        grads = [g if g is not None else creation.zeros_like(x) for g, x in zip(grads, flat)]
        result, k = [], 0
        for leaves, spec in tracked:
            result.append(pytree.unflatten(spec, grads[k:k + len(leaves)]))
            k += len(leaves)
        return tuple(result)

    out = out if outer else _detach_tree(out, False)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to argument ``argnums`` by reverse mode (one
    vector-Jacobian product per output element): shape ``output.shape + input.shape``.
    (``chunk_size`` is accepted: the products run one at a time in any case.)"""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")

        def of_selected(*selected):
            full = list(args)
            for a, x in zip(nums, selected):
                full[a] = x
            return func(*full, **kwargs)

        res = vjp(of_selected, *[args[a] for a in nums], has_aux=has_aux)
        out, vjp_fn = res[0], res[1]
        if not isinstance(out, Tensor):
            raise RuntimeError("jacrev: expected func to return a Tensor")
        basis = F.reshape(_eye(out.numel(), out), (out.numel(),) + tuple(out.shape))
        rows = [vjp_fn(basis[i]) for i in range(out.numel())]
        jac = tuple(_stack_rows([r[k] for r in rows], out, args[a]) for k, a in enumerate(nums))
        jac = jac[0] if isinstance(argnums, int) else jac
        return (jac, res[2]) if has_aux else jac

    return wrapped


def _eye(n, like):
    return creation.eye(n, dtype=like.dtype)


def _stack_rows(rows, out, inp):
    if not rows:
        return creation.zeros(tuple(out.shape) + tuple(inp.shape), dtype=inp.dtype)
    return F.reshape(F.stack(rows), tuple(out.shape) + tuple(inp.shape))


# ----------------------------------------------------------------------------- forward mode
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), jvp_out)``: the Jacobian-vector product along ``tangents`` (one per
    primal), by forward-mode AD."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    if len(primals) != len(tangents):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same "
                           f"length, got {len(primals)} and {len(tangents)}")
    with fwAD.dual_level():
        duals = []
        for p, t in zip(primals, tangents):
            pl, spec = pytree.flatten(p)
            tl, _ = pytree.flatten(t)
            duals.append(pytree.unflatten(spec, [fwAD.make_dual(a, b) for a, b in zip(pl, tl)]))
        out, aux = _split_aux(func(*duals), has_aux, "jvp")
        leaves, spec = pytree.flatten(out)
        primal_out, tangent_out = [], []
        for x in leaves:
            unpacked = fwAD.unpack_dual(x)
            primal_out.append(unpacked.primal)
            tangent_out.append(unpacked.tangent if unpacked.tangent is not None else creation.zeros_like(unpacked.primal))
    result = (pytree.unflatten(spec, primal_out), pytree.unflatten(spec, tangent_out))
    return result + (aux,) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals`` (forward mode, evaluated at each call).

    >>> import tracegrad as tg
    >>> out, jvp_fn = linearize(tg.sin, tg.tensor([0.0]))
    >>> jvp_fn(tg.tensor([2.0]))
    tensor([2.])
    """
    output = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents (one per primal), got {len(tangents)}")
        return jvp(func, tuple(primals), tuple(tangents))[1]

    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` with PyTorch's guarantee of ``functionalize``: the same results and the same
    writes into its inputs. tracegrad's compiler already turns in-place writes into functional
    updates and write-backs when it traces (see ``ir/trace.py``), so the function is returned
    to run as it is."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators "
                           "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapped


def replace_all_batch_norm_modules_(root):
    """In place: every batch norm of ``root`` stops tracking running statistics (its running
    mean, variance and count become None), so it normalises with batch statistics, as vmap
    over a model needs. Returns ``root``."""
    from .nn.modules.batchnorm import _NormBase

    for module in root.modules():
        if isinstance(module, _NormBase):
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to argument ``argnums`` by forward mode (one
    Jacobian-vector product per input element): shape ``output.shape + input.shape``."""
    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        jacs, aux = [], None
        for a in nums:
            x = args[a]

            def of_x(v, a=a):
                return func(*args[:a], v, *args[a + 1:], **kwargs)

            basis = F.reshape(_eye(x.numel(), x), (x.numel(),) + tuple(x.shape))
            cols = []
            for i in range(x.numel()):
                res = jvp(of_x, (x,), (basis[i],), has_aux=has_aux)
                cols.append(res[1])
                aux = res[2] if has_aux else None
            out = of_x(x)  # (for the output's shape, also when x is empty)
            out = out[0] if has_aux else out
            jac = F.stack(cols, -1) if cols else creation.zeros(tuple(out.shape) + (0,), dtype=out.dtype)
            jacs.append(F.reshape(jac, tuple(out.shape) + tuple(x.shape)))
        jac = jacs[0] if isinstance(argnums, int) else tuple(jacs)
        return (jac, aux) if has_aux else jac

    return wrapped


def hessian(func, argnums=0):
    """The Hessian of a scalar-valued ``func`` with respect to argument ``argnums``: the
    Jacobian of its gradient (reverse mode twice)."""
    return jacrev(jacrev(func, argnums), argnums)


# ----------------------------------------------------------------------------- vmap
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a batch dimension: ``in_dims`` (an int, None for unmapped, or a
    tuple with one entry per argument, entries pytrees like the arguments) says which dim of
    each input is the batch; the outputs get it at ``out_dims`` (None: an output the same for
    every element, returned without a batch dim).

    ``func`` is traced once on one element and its graph replayed on the whole batch with
    batching rules (see ``tracegrad.compiler.transforms.vmap``). A function that cannot be traced (a graph
    break, in-place writes into tensors it did not create) runs once per element instead,
    with a warning that names the reason."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. "
                           f"Got {randomness}")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
                             f"the structure of `inputs`: {len(dims)} entries for {len(args)} arguments")
        leaves, spec = pytree.flatten(args)
        leaf_dims = _leaf_dims(args, dims)
        size = _batch_size(leaves, leaf_dims, in_dims)
        try:
            outs, out_spec = batching.vmap_call(func, leaves, spec, leaf_dims, kwargs, size, randomness)
        except batching.Unbatchable as e:
            warnings.warn(f"vmap: running {getattr(func, '__name__', 'the function')} once per batch "
                          f"element: {e}", stacklevel=2)
            outs, out_spec = _vmap_loop(func, leaves, spec, leaf_dims, kwargs, size, randomness)
        odims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outs)
        if len(odims) != len(outs):
            raise ValueError(f"vmap(f, ..., out_dims={out_dims}): out_dims is not compatible with the "
                             f"structure of the outputs: {len(odims)} entries for {len(outs)} outputs")
        return pytree.unflatten(out_spec, [_place_batch_dim(t, b, d, size) for (t, b), d in zip(outs, odims)])

    return wrapped


def _batch_size(leaves, leaf_dims, in_dims):
    """The one size of the mapped dims of ``leaves`` (``None`` in ``leaf_dims``: not mapped);
    ValueError, as PyTorch's, when none is mapped, the sizes differ, or the size is 0."""
    sizes = {x.shape[d] for x, d in zip(leaves, leaf_dims) if d is not None}
    if not sizes:
        raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one input must be "
                         f"mapped over (got in_dims=None for every input)")
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sorted(sizes)} for the mapped dimension")
    (size,) = sizes
    if size == 0:
        raise ValueError("vmap: the mapped dimension has size 0, so there is no call to take the "
                         "outputs' structure and shapes from")
    return size


def _vmap_loop(func, leaves, spec, leaf_dims, kwargs, size, randomness):
    """``func`` once per element, results stacked: (tensor, batched) per output leaf."""
    default_generator = creation.default_generator
    start = default_generator.rng.bit_generator.state
    results = []
    for i in range(size):
        if randomness == "same":
            default_generator.rng.bit_generator.state = start
        before = default_generator.rng.bit_generator.state
        sliced = [x.select(d, i) if d is not None else x for x, d in zip(leaves, leaf_dims)]
        results.append(func(*pytree.unflatten(spec, sliced), **kwargs))
        if randomness == "error" and default_generator.rng.bit_generator.state != before:
            raise RuntimeError(batching.RANDOMNESS_ERROR)
    out_leaves = [pytree.flatten(r)[0] for r in results]
    _, out_spec = pytree.flatten(results[0])
    for leaf in out_leaves[0]:
        batching.check_output(leaf)
    return [(F.stack([leaves_i[k] for leaves_i in out_leaves], 0), True)
            for k in range(len(out_leaves[0]))], out_spec


def _place_batch_dim(t, batched, dim, size):
    """An output with its batch dim (first, when ``batched``) moved to ``dim``."""
    if dim is None:
        if batched:
            raise ValueError("vmap: out_dims=None for an output that depends on the mapped inputs "
                             "(only outputs that are the same for every element may have no batch dim)")
        return t
    if not batched:
        t = t.unsqueeze(0).expand(size, *t.shape)
    return t.movedim(0, dim if dim >= 0 else dim + t.ndim)


def _leaf_dims(args, dims):
    """One batch dim (or None) per tensor leaf of ``args``, from ``dims`` (per argument: an int,
    None, or a pytree matching that argument)."""
    out = []
    for arg, d in zip(args, dims):
        leaves = pytree.flatten(arg)[0]
        if d is None or isinstance(d, int):
            per = [d] * len(leaves)
        else:
            per = pytree.flatten(d)[0]
            if len(per) != len(leaves):
                raise ValueError(f"vmap: in_dims {d!r} does not match the structure of its argument")
        for x, dd in zip(leaves, per):
            if dd is not None and not isinstance(x, Tensor):
                raise ValueError(f"vmap: Got in_dim={dd} for an input but the input is of type "
                                 f"{type(x).__name__}. We cannot vmap over non-Tensor arguments")
            if dd is not None and not -x.ndim <= dd < x.ndim:
                raise ValueError(f"vmap: Got in_dim={dd} for an input but the input has {x.ndim} dims")
            out.append(None if dd is None else dd % x.ndim)
    return out
