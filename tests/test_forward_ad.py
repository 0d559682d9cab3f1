"""Forward-mode AD (tg.autograd.forward_ad) against torch.autograd.forward_ad / torch.func.jvp:
levels, make_dual / unpack_dual, errors with PyTorch's messages, in-place ops on duals, custom
Function jvp, and a registry-driven check of every op's tangent (and of tangents flowing
through its VJP rule, which forward-over-reverse Hessians rely on)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as tfwAD  # noqa: E402

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402
import tracegrad.autograd.forward_ad as fwAD  # noqa: E402
from tracegrad.ops import samples  # noqa: E402
from tracegrad.ops.registry import REGISTRY  # noqa: E402


def _err(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


def both_raise(tg_fn, torch_fn):
    a, b = _err(tg_fn), _err(torch_fn)
    assert b is not None and a is not None, (a, b)
    assert a == b, f"tracegrad: {a}\ntorch:     {b}"


def f64(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ----------------------------------------------------------------------------- the API
def test_docstring_example_and_tangent_cleared_after_level():
    x, v = f64(3), f64(3, seed=1)
    with fwAD.dual_level():
        out = fwAD.make_dual(oracle.to_tg(x), oracle.to_tg(v)).sin() * 2
        primal, tangent = fwAD.unpack_dual(out)
        assert tangent is not None
    with tfwAD.dual_level():
        ref = tfwAD.unpack_dual(tfwAD.make_dual(oracle.to_torch(x), oracle.to_torch(v)).sin() * 2)
    oracle.assert_close(primal, ref.primal)
    oracle.assert_close(tangent, ref.tangent)
    assert fwAD.unpack_dual(out).tangent is None  # deleted with the level, as in PyTorch


def test_unpack_dual_is_a_namedtuple():
    x = tg.tensor([1.0, 2.0])
    with fwAD.dual_level():
        t = tg.ones(2)
        d = fwAD.make_dual(x, t)
        u = fwAD.unpack_dual(d)
        assert isinstance(u, tuple) and u._fields == ("primal", "tangent")
        assert u.tangent is t  # stored as given (PyTorch too)
        assert fwAD.unpack_dual(u.primal).tangent is None
        assert fwAD.unpack_dual(x).tangent is None
    assert fwAD.unpack_dual(d) == (d, None)  # outside a level: (tensor, None)


def test_repr_shows_the_tangent_inside_a_level_like_torch():
    reprs = []
    for lib, ad in ((tg, fwAD), (torch, tfwAD)):
        with ad.dual_level():
            x = ad.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([0.5, 1.0]))
            reprs.append([repr(x), repr(x * 2), repr(lib.ones(2))])
        reprs[-1].append(repr(ad.unpack_dual(x).primal))
    assert reprs[0] == reprs[1]


def test_level_index_and_no_nesting():
    with fwAD.dual_level() as lvl:
        assert lvl == 0

    def nested(mod):
        with mod.dual_level():
            with mod.dual_level():
                pass

    both_raise(lambda: nested(fwAD), lambda: nested(tfwAD))
    # the failed inner enter leaves the outer level usable and then closed
    assert fwAD._active_level is None


def test_make_dual_errors_match_torch():
    x = f64(3)
    both_raise(lambda: fwAD.make_dual(oracle.to_tg(x), tg.ones(3, dtype=tg.float64)),
               lambda: tfwAD.make_dual(oracle.to_torch(x), torch.ones(3, dtype=torch.float64)))
    with fwAD.dual_level(), tfwAD.dual_level():
        both_raise(lambda: fwAD.make_dual(oracle.to_tg(x), tg.ones(2, dtype=tg.float64)),
                   lambda: tfwAD.make_dual(oracle.to_torch(x), torch.ones(2, dtype=torch.float64)))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(tg.tensor([1, 2]), tg.ones(2))
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex"):
            fwAD.make_dual(tg.ones(2), tg.tensor([1, 2]))
        with pytest.raises(ValueError, match="Expected tangent"):
            tfwAD.make_dual(torch.ones(2), torch.tensor([1, 2]))
        d, td = fwAD.make_dual(tg.ones(2), tg.ones(2)), tfwAD.make_dual(torch.ones(2), torch.ones(2))
        both_raise(lambda: fwAD.make_dual(d, tg.ones(2)), lambda: tfwAD.make_dual(td, torch.ones(2)))


def test_exit_without_level_raises():
    with pytest.raises(RuntimeError, match="Trying to exit a forward AD level"):
        fwAD.exit_dual_level()


def test_op_without_jvp_is_named():
    from tracegrad.ops.registry import OpDef

    op = OpDef("nojvp_demo", infer=lambda x: (tuple(x.shape), x.dtype), impl=lambda x: x * 1,
               vjp=lambda ctx, g: (g,), jvp=None)
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.ones(2), tg.ones(2))
        with pytest.raises(NotImplementedError,
                           match="Trying to use forward AD with nojvp_demo that does not support it"):
            op(d)


def test_non_float_outputs_get_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 3.0, 2.0]), tg.ones(3))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None
        assert fwAD.unpack_dual(d.long()).tangent is None
        assert fwAD.unpack_dual(d.detach()).tangent is None  # detach drops it (as torch)


def test_broadcast_and_mixed_dual_plain_inputs():
    x, y, v = f64(3), f64(2, 3, seed=2), f64(3, seed=3)
    with fwAD.dual_level():
        d = fwAD.make_dual(oracle.to_tg(x), oracle.to_tg(v))
        got = fwAD.unpack_dual(d * oracle.to_tg(y) + d.exp().sum()).tangent
    with tfwAD.dual_level():
        td = tfwAD.make_dual(oracle.to_torch(x), oracle.to_torch(v))
        want = tfwAD.unpack_dual(td * oracle.to_torch(y) + td.exp().sum()).tangent
    oracle.assert_close(got, want)


def test_float32_tangent_on_float64_primal():
    with fwAD.dual_level():
        d = fwAD.make_dual(tg.tensor([1.0, 2.0], dtype=tg.float64), tg.ones(2))
        out = fwAD.unpack_dual(d * d)
        assert out.tangent.dtype is tg.float64
        np.testing.assert_allclose(out.tangent.numpy(), [2.0, 4.0])


def test_inplace_ops_update_tangents_like_torch():
    x, v = f64(4), f64(4, seed=1)

    def run(lib, mod, mk):
        with mod.dual_level():
            d = mod.make_dual(mk(x), mk(v))
            y = d * 2
            y.mul_(3)
            y.add_(d.sin())
            z = mk(np.zeros(4))
            z[1:3] = d[:2]  # write a dual into a plain tensor through a view
            w = d.exp()
            w.zero_()
            base = mk(x)
            dd = mod.make_dual(base, mk(v))
            dd.mul_(3)  # the dual keeps its tangent to itself: base gets none
            p = mk(np.zeros(4))
            pv = p[1:]
            pv.copy_(d[:3])  # copy_ of a dual into a view of a plain tensor
            after = p.reshape(2, 2)  # a view taken afterwards sees the base's tangent
            return [mod.unpack_dual(t).tangent for t in (y, z, w, dd, base, p, pv, after)]

    ours = run(tg, fwAD, oracle.to_tg)
    ref = run(torch, tfwAD, oracle.to_torch)
    for i, (a, b) in enumerate(zip(ours, ref)):
        if b is None:
            assert a is None, f"tangent {i}: torch has none"
            continue
        got = np.zeros(tuple(b.shape)) if a is None else oracle.np_of(a)
        oracle.assert_close(got, b, f"tangent {i}")


def test_tangents_are_differentiable_in_reverse_mode():
    """Reverse-over-forward: the tangent carries a graph to the primal and to the tangent."""
    x = oracle.to_tg(f64(3), requires_grad=True)
    v = oracle.to_tg(f64(3, seed=1), requires_grad=True)
    tx, tv = oracle.to_torch(f64(3), True), oracle.to_torch(f64(3, seed=1), True)
    with fwAD.dual_level():
        t = fwAD.unpack_dual((fwAD.make_dual(x, v) ** 3).sum()).tangent
    with tfwAD.dual_level():
        tt = tfwAD.unpack_dual((tfwAD.make_dual(tx, tv) ** 3).sum()).tangent
    got = tg.autograd.grad(t, (x, v))
    want = torch.autograd.grad(tt, (tx, tv))
    for g, w in zip(got, want):
        oracle.assert_close(g, w)


def test_forward_over_reverse_through_saved_outputs():
    """Tangents flow through a backward pass run inside the level (exp saves its output)."""
    x, v = f64(3), f64(3, seed=1)

    def hvp(lib, mod, mk):
        xx = mk(x, True)
        with mod.dual_level():
            d = mod.make_dual(xx, mk(v))
            (g,) = lib.autograd.grad((d.exp() * d.tanh()).sum(), d, create_graph=True)
            return mod.unpack_dual(g).tangent

    oracle.assert_close(hvp(tg, fwAD, oracle.to_tg), hvp(torch, tfwAD, oracle.to_torch))


# ----------------------------------------------------------------------------- custom Function
def test_custom_function_jvp_with_save_for_forward():
    """The example of FunctionCtx.save_for_forward (reference page 002)."""
    Function = tg.autograd.Function

    class Func(Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            return x * y * z

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x, y = ctx.saved_tensors
            z = ctx.z
            return z * (y * x_t + x * y_t)

        @staticmethod
        def vjp(ctx, grad_out):
            x, y = ctx.saved_tensors
            z = ctx.z
            return z * grad_out * y, z * grad_out * x, None

    a = tg.tensor(1.0, requires_grad=True, dtype=tg.float64)
    t = tg.tensor(1.0, dtype=tg.float64)
    b = tg.tensor(2.0, requires_grad=True, dtype=tg.float64)
    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        d = Func.apply(a_dual, b, 4)
        tangent = fwAD.unpack_dual(d).tangent
    assert tangent is not None and float(tangent) == pytest.approx(8.0)  # z * y * x_t
    d.backward()
    assert float(a.grad) == pytest.approx(8.0) and float(b.grad) == pytest.approx(4.0)


def test_custom_function_without_jvp_errors_like_torch():
    def make(lib):
        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        return NoJvp

    tg_fn, torch_fn = make(tg), make(torch)
    with fwAD.dual_level(), tfwAD.dual_level():
        both_raise(lambda: tg_fn.apply(fwAD.make_dual(tg.ones(2), tg.ones(2))),
                   lambda: torch_fn.apply(tfwAD.make_dual(torch.ones(2), torch.ones(2))))


def test_custom_function_jvp_count_mismatch_errors_like_torch():
    def make(lib):
        class TwoOut(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2, a * 3

            @staticmethod
            def backward(ctx, g, h):
                return g * 2 + h * 3

            @staticmethod
            def jvp(ctx, t):
                return t * 2

        return TwoOut

    tg_fn, torch_fn = make(tg), make(torch)
    with fwAD.dual_level(), tfwAD.dual_level():
        both_raise(lambda: tg_fn.apply(fwAD.make_dual(tg.ones(2), tg.ones(2))),
                   lambda: torch_fn.apply(tfwAD.make_dual(torch.ones(2), torch.ones(2))))


# ----------------------------------------------------------------------------- every registry op
CASES = [(n, k) for n in sorted(REGISTRY) for k in range(len(samples.cases(REGISTRY[n])))
         if REGISTRY[n].differentiable and n in oracle.TWINS]


def _duals(op, arrays, diff, tangents, mod, mk, requires_grad=False):
    return [mod.make_dual(mk(a, requires_grad), mk(tangents[i])) if i in diff else mk(a)
            for i, a in enumerate(arrays)]


# where PyTorch's own forward mode is wrong or missing, the reference is central differences
# instead (keys: an op name, or name-reduce)
TORCH_FORWARD_AD_WRONG = {
    "scatter_reduce-prod": "torch.func.jvp of scatter_reduce(reduce='prod') disagrees with finite "
                           "differences (torch 2.13)",
    "igamma": "torch 2.13 has no forward AD for igamma",
    "igammac": "torch 2.13 has no forward AD for igammac",
    "linalg_det-None": "torch.func.jvp of det is 0 at a singular matrix (its det(A) A^-T shortcut), "
                       "where the cofactors give the true tangent",
    "zeta-None": "torch 2.13 has no forward AD for special.zeta (NotImplementedError)",
}


def _torch_forward_ad_wrong(name, attrs):
    return name in TORCH_FORWARD_AD_WRONG or f"{name}-{attrs.get('reduce')}" in TORCH_FORWARD_AD_WRONG


def _reference_tolerance(name, attrs):
    # (central differences of step 1e-6 are good to about 1e-9 absolute)
    return dict(rtol=1e-6, atol=1e-8) if _torch_forward_ad_wrong(name, attrs) else {}


def _central_difference(fn, arrays, diff, tangents, eps=1e-4):
    """The directional derivative by the fourth-order central stencil (exact for polynomials up
    to degree 4, such as products and small determinants; ~1e-12 for smooth functions)."""
    def at(step):
        moved = [a + step * eps * tangents[i] if i in diff else a for i, a in enumerate(arrays)]
        return oracle.np_of(fn(moved))

    return np.asarray((at(-2) - 8 * at(-1) + 8 * at(1) - at(2)) / (12 * eps))


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_every_op_tangent_matches_torch(name, k):
    """make_dual -> the op through dispatch -> unpack_dual, against torch.func.jvp of its twin."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op)[k]
    diff = samples.differentiable_positions(op, arrays)
    if not diff:
        pytest.skip("no differentiable input in this sample")
    rng = np.random.default_rng(11)
    tangents = {i: rng.standard_normal(arrays[i].shape) for i in diff}
    with fwAD.dual_level():
        got = fwAD.unpack_dual(op(*_duals(op, arrays, diff, tangents, fwAD, oracle.to_tg), **attrs))

    fixed = [oracle.to_torch(a) for a in arrays]

    def twin(*xs):
        args = list(fixed)
        for i, x in zip(diff, xs):
            args[i] = x
        return oracle.TWINS[name](*args, **attrs)

    if _torch_forward_ad_wrong(name, attrs):
        primal = twin(*[fixed[i] for i in diff])
        tangent = _central_difference(lambda xs: op(*[oracle.to_tg(x) for x in xs], **attrs),
                                      arrays, diff, tangents)
    else:
        primal, tangent = torch.func.jvp(twin, tuple(fixed[i] for i in diff),
                                         tuple(oracle.to_torch(tangents[i]) for i in diff))
    oracle.assert_close(got.primal, primal, f"{name} primal")
    assert got.tangent is not None, f"{name}: no tangent"
    oracle.assert_close(got.tangent, tangent, f"{name} tangent", **_reference_tolerance(name, attrs))


@pytest.mark.parametrize("name,k", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_every_op_vjp_rule_propagates_tangents(name, k):
    """Forward-over-reverse: the tangent of grad(op(x), x, cot) for dual x equals torch's
    (this runs every VJP rule's ops under forward AD, as hessian(forward-mode) does)."""
    op = REGISTRY[name]
    arrays, attrs = samples.cases(op)[k]
    diff = samples.differentiable_positions(op, arrays)
    if not diff:
        pytest.skip("no differentiable input in this sample")
    rng = np.random.default_rng(12)
    tangents = {i: rng.standard_normal(arrays[i].shape) for i in diff}

    def run(lib, mod, mk, fn):
        with mod.dual_level():
            args = _duals(op, arrays, diff, tangents, mod, mk, requires_grad=True)
            out = fn(*args)
            cot = mk(np.random.default_rng(13).standard_normal(tuple(out.shape)))
            grads = lib.autograd.grad(out, [args[i] for i in diff], cot, allow_unused=True,
                                      create_graph=True)
            return [None if g is None else mod.unpack_dual(g).tangent for g in grads]

    ours = run(tg, fwAD, oracle.to_tg, lambda *a: op(*a, **attrs))
    if _torch_forward_ad_wrong(name, attrs):
        cot = np.random.default_rng(13).standard_normal(tuple(op(*[oracle.to_tg(a) for a in arrays], **attrs).shape))

        def gradient(xs, i):
            inputs = [oracle.to_tg(x, requires_grad=j in diff) for j, x in enumerate(xs)]
            return tg.autograd.grad(op(*inputs, **attrs), inputs[i], oracle.to_tg(cot))[0]

        ref = [_central_difference(lambda xs, i=i: gradient(xs, i), arrays, diff, tangents) for i in diff]
    else:
        ref = run(torch, tfwAD, oracle.to_torch, lambda *a: oracle.TWINS[name](*a, **attrs))
    for i, a, b in zip(diff, ours, ref):
        shape = arrays[i].shape
        a = np.zeros(shape) if a is None else oracle.np_of(a)
        b = np.zeros(shape) if b is None else oracle.np_of(b)
        oracle.assert_close(a, b, f"{name}: tangent of the gradient of input {i}",
                            **_reference_tolerance(name, attrs))
