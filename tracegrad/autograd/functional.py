"""The higher-level functional API (mirrors ``torch.autograd.functional``): ``jacobian``,
``hessian``, ``vjp``, ``jvp``, ``vhp`` and ``hvp`` of functions from Tensors to Tensors, with
PyTorch's signatures, return structures, checks and messages.

>>> import tracegrad as tg
>>> from tracegrad.autograd.functional import jacobian, hessian
>>> jacobian(lambda x: x ** 2, tg.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
>>> hessian(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]))
tensor([[ 6.,  0.],
        [ 0., 12.]])

``jvp`` uses the double-backward trick like PyTorch's; ``jacobian(strategy="forward-mode")``
uses forward-mode AD (``tg.autograd.forward_ad``). ``vectorize=True`` is accepted and gives the
same results as the row-by-row loop (``tg.func.vmap`` is a loop too); as in PyTorch it cannot be
combined with ``strict=True`` and is required by ``strategy="forward-mode"``.
"""
from __future__ import annotations

from ..core import creation
from ..core.tensor import Tensor
from ..ops import helpers as H
from . import forward_ad as fwAD
from . import grad_mode
from .engine import grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# ----------------------------------------------------------------------------- helpers
def _as_tuple(inp, arg_name=None, fn_name=None):
    """(was it a tuple, the inputs as a tuple of Tensors), with PyTorch's type errors."""
    if arg_name is None and fn_name is None:
        return inp if isinstance(inp, tuple) else tuple(inp) if isinstance(inp, list) else (inp,)
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                            f"Tensors but the {where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo ``_as_tuple`` on results (one flag, or two for nested output x input results)."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Always fresh Tensor objects (so that inputs captured by the function are told apart from
    the arguments): a differentiable alias under create_graph, else a detached leaf."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.reshape(tuple(inp.shape)))  # a view: a new object with history
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got "
                               f"{el_v.size()}.")


def _check_requires_grad(inputs, input_type, strict):
    """The strict-mode checks, with PyTorch's messages."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}."
                               " This is not allowed in strict mode.")
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is independent "
                "of the input. This is not allowed in strict mode. You should ensure that your "
                "function is thrice differentiable and that the hessian depends on the inputs.")
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided function "
                f"with respect to input {i} is independent of the input. This is not allowed in "
                "strict mode. You should ensure that your function is twice differentiable and that "
                "the jacobian depends on the inputs (this would be violated by a linear function for "
                "example).")
        if input_type == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs "
                               "of the user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                           "outputs must be computed in a differentiable manner from the input when "
                           "running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` that skips outputs which are None or do not require grad."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    new_outputs, new_grads = zip(*pairs)
    return grad(new_outputs, inputs, new_grads, allow_unused=True, create_graph=create_graph,
                retain_graph=retain_graph)


_STAGE_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
            "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
                   "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in "
                         "the grad_jacobian. This is not allowed in strict mode as it prevents from "
                         "using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Replace missing gradients by zeros (or raise in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STAGE_MESSAGES[stage].format(i=i))
            g = creation.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _check_v_none(inputs, fn_phrase):
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {fn_phrase} a single Tensor with a "
                           "single element.")


def _prepare_v(v, refs, is_refs_tuple, create_graph, fn_name, fn_phrase):
    if v is None:
        _check_v_none(refs, fn_phrase)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, refs, is_refs_tuple)
    return v


_INPUT_PHRASE = "input to the user-provided function is"


# ----------------------------------------------------------------------------- vjp / jvp
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T · J)``: the vector-Jacobian product at ``inputs``.

    >>> import tracegrad as tg
    >>> out, g = vjp(lambda x: 2 * x, tg.ones(2), tg.tensor([1.0, 3.0]))
    >>> g
    tensor([2., 6.])
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "user-provided function returns")
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J · v)``: the Jacobian-vector product, by the double-backward trick.

    >>> import tracegrad as tg
    >>> out, t = jvp(lambda x: x ** 2, tg.tensor([1.0, 2.0]), tg.ones(2))
    >>> t
    tensor([2., 4.])
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _INPUT_PHRASE)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # backward is linear in grad_outputs, so their value does not matter (zeros: no inf/nan)
        grad_outputs = tuple(creation.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_outputs_tuple)


# ----------------------------------------------------------------------------- jacobian
def _check_strategy(strategy, hint=True):
    if strategy not in ("forward-mode", "reverse-mode"):
        extra = (' Hint: If your function has more outputs than inputs, "forward-mode" tends to be '
                 'more performant. Otherwise, prefer to use "reverse-mode".') if hint else ""
        raise AssertionError(f'Expected strategy to be either "forward-mode" or "reverse-mode".{extra}')


def _jacfwd(func, inputs, strict=False, vectorize=False):
    """Forward-mode Jacobian: one dual evaluation of ``func`` per input element."""
    if strict:
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                           'are not supported together (yet). Please either set `strict=False` or '
                           '`strategy="reverse-mode"`.')
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                  "only implemented for `vectorize=True`.")
    columns = []  # per input j: per element k: tuple of output tangents
    is_outputs_tuple, primal_outs = None, None
    for j, inp in enumerate(inputs):
        cols_j = []
        basis = creation.eye(inp.numel(), dtype=inp.dtype)
        for k in range(inp.numel()):
            with fwAD.dual_level():
                # every input is dual (zero tangents but one), as in PyTorch's vectorized version
                dual_inputs = tuple(
                    fwAD.make_dual(x, basis[k].reshape(tuple(x.shape)) if i == j else creation.zeros_like(x))
                    for i, x in enumerate(inputs))
                is_outputs_tuple, outs = _as_tuple(func(*dual_inputs), "outputs")
                unpacked = [fwAD.unpack_dual(o) for o in outs]
                primal_outs = [u.primal for u in unpacked]
                cols_j.append(tuple(u.tangent if u.tangent is not None else creation.zeros_like(u.primal)
                                    for u in unpacked))
        columns.append(cols_j)
    if primal_outs is None:  # every input is empty: evaluate once for the output shapes
        is_outputs_tuple, primal_outs = _as_tuple(func(*inputs), "outputs")
    # lists, not tuples: PyTorch's forward-mode jacobian returns (nested) lists
    jac = []
    for i, out in enumerate(primal_outs):
        row = []
        for j, inp in enumerate(inputs):
            if columns[j]:
                stacked = H.stack([col[i] for col in columns[j]], dim=-1)
                row.append(stacked.reshape(tuple(out.shape) + tuple(inp.shape)))
            else:
                row.append(creation.zeros(tuple(out.shape) + tuple(inp.shape), dtype=out.dtype))
        jac.append(row)
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``.

    A single Tensor for one input and one output; a tuple when either is a tuple; a tuple of
    tuples (``J[i][j]`` = d output i / d input j, of shape ``out_i.shape + in_j.shape``) when
    both are.

    >>> import tracegrad as tg
    >>> jacobian(lambda x, y: x * y, (tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0])))
    (tensor([[3., 0.],
            [0., 4.]]), tensor([[1., 0.],
            [0., 2.]]))
    """
    _check_strategy(strategy)
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please '
                                      'either set `create_graph=False` or `strategy="reverse-mode"`.')
        return _jacfwd(func, inputs, strict, vectorize)

    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                              "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` "
                               "are not supported together. Please either set `strict=False` or "
                               "`vectorize=False`.")
        jacobian_rows = []
        for i, out in enumerate(outputs):
            per_input = tuple([] for _ in inputs)
            seeds = creation.eye(out.numel(), dtype=out.dtype)
            for k in range(out.numel()):
                # one backward per output element, seeded with the k-th basis vector
                vj = _autograd_grad((out,), inputs, (seeds[k].reshape(tuple(out.shape)),),
                                    retain_graph=True, create_graph=create_graph)
                for el_idx, (acc, vj_el, inp_el) in enumerate(zip(per_input, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError("The jacobian of the user-provided function is independent "
                                               f"of input {i}. This is not allowed in strict mode when "
                                               "create_graph=True.")
                        acc.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent "
                                               f"of input {el_idx}. This is not allowed in strict mode.")
                        acc.append(creation.zeros_like(inp_el))
            jacobian_rows.append(tuple(_stack_rows(acc, out, inputs[el_idx])
                                       for el_idx, acc in enumerate(per_input)))
        jac = _grad_postprocess(tuple(jacobian_rows), create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _stack_rows(rows, out, inp):
    shape = tuple(out.shape) + tuple(inp.shape)
    if not rows:  # an output with no element
        return creation.zeros(shape, dtype=inp.dtype)
    return H.stack(rows, dim=0).reshape(shape)


# ----------------------------------------------------------------------------- hessian, vhp, hvp
def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: the Jacobian of its (reverse-mode) Jacobian.

    ``H[i][j]`` (for tuple inputs) has shape ``in_i.shape + in_j.shape``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    _check_strategy(outer_jacobian_strategy, hint=False)

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a "
                               "single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            # the inner jacobian must see inputs that require grad (else they would be detached)
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs, name, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a "
                           "single element")
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T · H)`` for a scalar function.

    >>> import tracegrad as tg
    >>> out, r = vhp(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]), tg.ones(2))
    >>> r
    tensor([ 6., 12.])
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp", _INPUT_PHRASE)
        is_outputs_tuple, outputs = _scalar_output(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H · v)`` for a scalar function (by the double-backward trick).

    >>> import tracegrad as tg
    >>> out, r = hvp(lambda x: (x ** 3).sum(), tg.tensor([1.0, 2.0]), tg.ones(2))
    >>> r
    tensor([ 6., 12.])
    """
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp", _INPUT_PHRASE)
        is_outputs_tuple, outputs = _scalar_output(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(creation.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(result, is_inputs_tuple)
