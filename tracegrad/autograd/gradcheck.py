"""``gradcheck`` and ``gradgradcheck``: compare the Jacobians autograd computes (reverse mode,
and forward mode on request) with central finite differences (PyTorch's
``torch.autograd.gradcheck`` semantics: the whole Jacobians, or one random projection of them
in ``fast_mode``).

>>> import tracegrad as tg
>>> x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
>>> tg.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
True
>>> tg.autograd.gradgradcheck(lambda t: t.exp() * t, (x,))
True
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core import creation
from ..core.tensor import Tensor
from . import forward_ad as fwAD
from . import grad_mode
from .engine import grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck / gradgradcheck when a Jacobian check fails."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _float_outputs(outputs):
    return [o for o in _as_tuple(outputs) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def _diff_inputs(inputs):
    return [(i, t) for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _check_inputs(inputs):
    diff = _diff_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none "
                         "of the them have requires_grad=True.")
    for i, t in diff:
        if t.dtype.name != "float64":
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point. This "
                "check will likely fail if all the inputs are not of double precision floating "
                "point. ", UserWarning, stacklevel=3)
    return diff


def _evaluate(fn, inputs):
    """Outputs of ``fn`` as flat float64 arrays. Grad mode stays on: ``fn`` may itself
    differentiate (gradgradcheck's first-order function does)."""
    with grad_mode.enable_grad():
        outs = _float_outputs(fn(*inputs))
    return [np.array(o.detach().numpy(), dtype=np.float64).reshape(-1) for o in outs]


def _numerical_jacobians(fn, inputs, diff, eps):
    """``jac[j][i]``: (numel of output i, numel of input j), by central differences. Each input
    is perturbed in place in its own storage (restored afterwards), like PyTorch."""
    jacobians = []
    for _, t in diff:
        values = t.detach().numpy()
        flat = values.reshape(-1)  # a view when the storage is contiguous
        if not np.shares_memory(flat, values):
            raise RuntimeError("gradcheck needs contiguous inputs; call .contiguous() first")
        cols = []
        for k in range(flat.size):
            orig = flat[k]
            flat[k] = orig - eps
            lo = _evaluate(fn, inputs)
            flat[k] = orig + eps
            hi = _evaluate(fn, inputs)
            flat[k] = orig
            cols.append([(h - l) / (2 * eps) for h, l in zip(hi, lo)])
        n_out = len(_evaluate(fn, inputs)) if not cols else len(cols[0])
        per_out = []
        for i in range(n_out):
            size = cols[0][i].size if cols else 0
            per_out.append(np.stack([c[i] for c in cols], axis=1) if cols else np.zeros((size, 0)))
        jacobians.append(per_out)
    return jacobians


def _analytical_jacobians(fn, inputs, diff):
    """Rows by reverse mode: one ``autograd.grad`` call per output element."""
    with grad_mode.enable_grad():
        outs = _float_outputs(fn(*inputs))
    tensors = [t for _, t in diff]
    jac = [[np.zeros((o.numel(), t.numel())) for o in outs] for t in tensors]
    for i, out in enumerate(outs):
        if not out.requires_grad:
            continue  # an output that does not depend on any input: its Jacobian is zero
        for r in range(out.numel()):
            onehot = np.zeros(out.numel(), dtype=out.dtype.np)
            onehot[r] = 1
            g = creation.tensor(onehot.reshape(tuple(out.shape)), dtype=out.dtype)
            grads = grad(out, tensors, grad_outputs=g, retain_graph=True, allow_unused=True)
            for j, (gr, t) in enumerate(zip(grads, tensors)):
                if gr is None:
                    continue
                if tuple(gr.shape) != tuple(t.shape):
                    raise GradcheckError(f"Gradient has incorrect size for input {diff[j][0]}: "
                                         f"expected {list(t.shape)}, got {list(gr.shape)}")
                jac[j][i][r] = np.asarray(gr.detach().numpy(), dtype=np.float64).reshape(-1)
    return jac


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func(*inputs)`` with respect to the inputs that require grad
    against finite differences: ``|analytical - numerical| <= atol + rtol * |numerical|``.

    Returns True, or raises ``GradcheckError`` ("Jacobian mismatch for output i with respect
    to input j", with both Jacobians) — or returns False when ``raise_exception=False``.
    ``check_forward_ad`` also checks forward mode (dual tensors), ``check_backward_ad=False``
    skips reverse mode; ``check_batched_grad`` checks ``vmap`` over the backward against a
    loop; ``fast_mode`` compares one random projection ``v^T J u`` instead of whole Jacobians
    (PyTorch's fast gradcheck: two function evaluations per input instead of 2n)."""
    if check_batched_forward_grad:
        raise NotImplementedError("gradcheck: check_batched_forward_grad is not supported (vmap over "
                                  "forward-mode AD)")
    if masked:
        raise NotImplementedError("gradcheck: masked=True concerns sparse tensors, which tracegrad has not")
    inputs = _as_tuple(inputs)
    diff = _check_inputs(inputs)
    if check_grad_dtypes:
        _check_grad_dtypes(func, inputs, diff)
    if fast_mode:
        return _fast_check(func, inputs, diff, eps, atol, rtol, raise_exception, check_backward_ad,
                           check_forward_ad)
    numerical = _numerical_jacobians(func, inputs, diff, eps)
    modes = ([("analytical", _analytical_jacobians)] if check_backward_ad else []) + \
        ([("forward AD", _forward_jacobians)] if check_forward_ad else [])
    for mode, jacobians in modes:
        analytical = jacobians(func, inputs, diff)
        for j, ((pos, _), a_j, n_j) in enumerate(zip(diff, analytical, numerical)):
            for i, (a, n) in enumerate(zip(a_j, n_j)):
                if a.shape == n.shape and np.allclose(a, n, rtol=rtol, atol=atol):
                    continue
                what = "Jacobian mismatch" if mode == "analytical" else "Jacobian computed with forward mode mismatch"
                msg = (f"{what} for output {i} with respect to input {pos},\n"
                       f"numerical:{_fmt(n)}\n{mode}:{_fmt(a)}\n")
                return _fail(msg, raise_exception)
    if check_backward_ad and nondet_tol >= 0:
        analytical = _analytical_jacobians(func, inputs, diff)
        again = _analytical_jacobians(func, inputs, diff)
        for j, (a_j, b_j) in enumerate(zip(analytical, again)):
            for i, (a, b) in enumerate(zip(a_j, b_j)):
                if np.abs(a - b).max(initial=0.0) > nondet_tol:
                    return _fail(f"Backward is not reentrant, i.e., running backward with same input "
                                 f"and grad_output multiple times gives different values, although "
                                 f"analytical gradient matches numerical gradient. The tolerance for "
                                 f"nondeterminism was {nondet_tol}.", raise_exception)
    if check_batched_grad:
        return _check_batched_grad(func, inputs, diff, atol, rtol, raise_exception)
    return True


def _forward_jacobians(fn, inputs, diff):
    """Columns by forward mode: one evaluation per input element, with a one-hot tangent."""
    jac = []
    for pos, t in diff:
        cols = []
        for k in range(t.numel()):
            onehot = np.zeros(t.numel(), dtype=t.dtype.np)
            onehot[k] = 1
            with fwAD.dual_level():
                primal = t.detach().requires_grad_(t.requires_grad)  # (a first-order function may differentiate it)
                dual = fwAD.make_dual(primal, creation.tensor(onehot.reshape(tuple(t.shape)), dtype=t.dtype))
                outs = _float_outputs(fn(*[dual if i == pos else x for i, x in enumerate(inputs)]))
                cols.append([_flat64(fwAD.unpack_dual(o).tangent, o.numel()) for o in outs])
        jac.append([np.stack([c[i] for c in cols], axis=1) if cols else np.zeros((0, 0))
                    for i in range(len(cols[0]) if cols else 0)])
    return jac


def _flat64(t, n):
    return np.zeros(n) if t is None else np.asarray(t.detach().numpy(), dtype=np.float64).reshape(-1)


def _fast_check(func, inputs, diff, eps, atol, rtol, raise_exception, backward, forward):
    """``v^T J u`` three ways: by central differences along ``u``, by one backward pass with
    ``v``, by one forward pass with tangent ``u``; ``u`` and ``v`` random unit vectors."""
    rng = np.random.default_rng(0)
    us = [rng.standard_normal(t.numel()) for _, t in diff]
    norm = np.sqrt(sum((u * u).sum() for u in us)) or 1.0
    us = [u / norm for u in us]
    flats = [t.detach().numpy().reshape(-1) for _, t in diff]
    originals = [f.copy() for f in flats]

    def shifted(sign):
        for f, o, u in zip(flats, originals, us):
            f[:] = o + sign * eps * u
        return _evaluate(func, inputs)

    hi, lo = shifted(1), shifted(-1)
    for f, o in zip(flats, originals):
        f[:] = o
    ju_numerical = [(h - l) / (2 * eps) for h, l in zip(hi, lo)]
    with grad_mode.enable_grad():
        outs = _float_outputs(func(*inputs))
    vs = [rng.standard_normal(o.numel()) for o in outs]
    want = sum(float(v @ ju) for v, ju in zip(vs, ju_numerical))
    checks = []
    if backward:
        pairs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
        got = 0.0
        if pairs:
            gs = grad([o for o, _ in pairs], [t for _, t in diff],
                      [creation.tensor(v.reshape(tuple(o.shape)), dtype=o.dtype) for o, v in pairs],
                      allow_unused=True)
            got = sum(float(_flat64(g, t.numel()) @ u) for g, (_, t), u in zip(gs, diff, us))
        checks.append(("Backward", got))
    if forward:
        with fwAD.dual_level():
            args = list(inputs)
            for (pos, t), u in zip(diff, us):
                primal = t.detach().requires_grad_(t.requires_grad)
                args[pos] = fwAD.make_dual(primal, creation.tensor(u.reshape(tuple(t.shape)), dtype=t.dtype))
            outs_f = _float_outputs(func(*args))
            got = sum(float(v @ _flat64(fwAD.unpack_dual(o).tangent, o.numel())) for o, v in zip(outs_f, vs))
        checks.append(("Forward", got))
    for mode, got in checks:
        if abs(got - want) > atol + rtol * abs(want):
            return _fail(f"Jacobian mismatch (fast mode, {mode.lower()} AD): v^T J u numerical {want!r}, "
                         f"analytical {got!r}", raise_exception)
    return True


def _check_batched_grad(func, inputs, diff, atol, rtol, raise_exception):
    """``vmap`` of the backward over two grad_outputs equals the backward of each."""
    # (lazy: tracegrad.func loads on first use, for start-up time (tracegrad/__init__.py), and
    # stands above autograd)
    from ..func import vmap

    with grad_mode.enable_grad():
        outs = [o for o in _float_outputs(func(*inputs)) if o.requires_grad]
    tensors = [t for _, t in diff]
    rng = np.random.default_rng(1)
    for i, out in enumerate(outs):
        gos = creation.tensor(rng.standard_normal((2, *out.shape)), dtype=out.dtype)
        one = lambda g: tuple(grad(out, tensors, g, retain_graph=True, allow_unused=True))
        batched = vmap(lambda g: tuple(x if x is not None else creation.zeros_like(t)
                                       for x, t in zip(one(g), tensors)))(gos)
        for k in range(2):
            for j, (b, x, t) in enumerate(zip(batched, one(gos[k]), tensors)):
                want = _flat64(x, t.numel())
                if not np.allclose(_flat64(b[k], t.numel()), want, rtol=rtol, atol=atol):
                    return _fail(f"While computing batched gradients, got: batched grad of output {i} with "
                                 f"respect to input {diff[j][0]} differs from the unbatched one",
                                 raise_exception)
    return True


def _check_grad_dtypes(func, inputs, diff):
    outs = [o for o in _float_outputs(func(*inputs)) if o.requires_grad]
    for out in outs:
        gs = grad(out, [t for _, t in diff], creation.ones_like(out), allow_unused=True)
        for (pos, t), g in zip(diff, gs):
            if g is not None and g.dtype is not t.dtype:
                raise GradcheckError(f"Gradient has dtype mismatch for input {pos}: expected "
                                     f"{t.dtype}, got {g.dtype}")


def _fmt(a):
    with np.printoptions(precision=4, suppress=True, threshold=200):
        return "\n" + str(a) if a.size else str(a)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Second-order check: gradcheck of ``(inputs, grad_outputs) -> vjp(func)(grad_outputs)``.
    Random ``grad_outputs`` (float64, requiring grad) are drawn when none are given, so the
    check also covers the derivative of the backward with respect to the incoming gradient."""
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)  # (its checks and warnings)
    with grad_mode.enable_grad():
        outs = [o for o in _float_outputs(func(*inputs)) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            creation.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, requires_grad=True)
            for o in outs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        outputs = [o for o in _float_outputs(func(*ins)) if o.requires_grad]
        diff_ins = [t for _, t in _diff_inputs(ins)]
        grads = grad(outputs, diff_ins, grad_outputs=list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, fast_mode=fast_mode, masked=masked)
