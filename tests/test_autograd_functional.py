"""tg.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) against
torch.autograd.functional: values, return structures (single Tensor / tuple / tuple of tuples),
create_graph, strict mode, vectorize, strategies, and PyTorch's error messages."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.autograd.functional as TAF  # noqa: E402

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402
import tracegrad.autograd.functional as AF  # noqa: E402


def arr(*shape, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def convert(x, lib):
    """ndarray / tuple of ndarrays -> tensors of ``lib`` (float64)."""
    if isinstance(x, tuple):
        return tuple(convert(e, lib) for e in x)
    return oracle.to_tg(x) if lib is tg else oracle.to_torch(x)


def assert_same(ours, ref, what="result", check_requires_grad=True):
    """Same nesting (tuple / list vs Tensor), same values, same requires_grad."""
    if isinstance(ref, (tuple, list)):
        assert type(ours) is type(ref) and len(ours) == len(ref), f"{what}: structure {type(ours)}"
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_same(a, b, f"{what}[{i}]", check_requires_grad)
        return
    assert isinstance(ours, tg.Tensor), f"{what}: expected a Tensor, got {type(ours).__name__}"
    oracle.assert_close(ours, ref, what)
    if check_requires_grad:
        assert ours.requires_grad == ref.requires_grad, f"{what}: requires_grad differs"


def run_both(name, fn_of_lib, inputs, *args, **kwargs):
    ours = getattr(AF, name)(fn_of_lib(tg), convert(inputs, tg), *[convert(a, tg) for a in args],
                             **kwargs)
    ref = getattr(TAF, name)(fn_of_lib(torch), convert(inputs, torch),
                             *[convert(a, torch) for a in args], **kwargs)
    # PyTorch's vmap path (vectorize=True) with create_graph attaches view nodes even to
    # constant jacobians; tracegrad's loop reports requires_grad by true dependence
    assert_same(ours, ref, name, not (kwargs.get("vectorize") and kwargs.get("create_graph")))
    return ours


def _err(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


def both_raise(name, fn_of_lib, inputs, *args, **kwargs):
    a = _err(lambda: getattr(AF, name)(fn_of_lib(tg), convert(inputs, tg),
                                       *[convert(x, tg) for x in args], **kwargs))
    b = _err(lambda: getattr(TAF, name)(fn_of_lib(torch), convert(inputs, torch),
                                        *[convert(x, torch) for x in args], **kwargs))
    assert a is not None and b is not None, (a, b)
    b = (b[0], b[1].replace("torch.Size", "tracegrad.Size"))  # the messages print sizes
    assert a == b, f"tracegrad: {a}\ntorch:     {b}"


# functions written once for both libraries
def exp_reducer(lib):
    return lambda x: x.exp().sum(dim=1)


def adder(lib):
    return lambda x, y: 2 * x + 3 * y


def two_outputs(lib):
    return lambda x, y: (x * y.sum(), x.sin().sum() * y.exp())


def pow_reducer(lib):
    return lambda x: x.pow(3).sum()


def pow_adder_reducer(lib):
    return lambda x, y: (2 * x.pow(2) + 3 * y.pow(2)).sum()


def mixed_scalar(lib):
    return lambda x, y: (x.exp() * y.tanh()).sum() + (x * y).sum() ** 2


# ----------------------------------------------------------------------------- jacobian
@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_structures_match_torch(create_graph, vectorize):
    kw = dict(create_graph=create_graph, vectorize=vectorize)
    run_both("jacobian", exp_reducer, arr(2, 2), **kw)          # Tensor -> Tensor
    run_both("jacobian", adder, (arr(2), arr(2, seed=1)), **kw)  # tuple -> Tensor
    run_both("jacobian", lambda lib: lambda x: (x.exp(), x.sum()), arr(3), **kw)  # Tensor -> tuple
    run_both("jacobian", two_outputs, (arr(2, 3), arr(4, seed=1)), **kw)  # tuple -> tuple
    run_both("jacobian", lambda lib: lambda x: x.exp(), (arr(2, 2),), **kw)  # 1-tuple input


def test_jacobian_of_scalar_and_unused_input():
    run_both("jacobian", lambda lib: lambda x: (x * x).sum(), arr(3))
    run_both("jacobian", lambda lib: lambda x, y: x * 2, (arr(3), arr(2, seed=1)))


def test_jacobian_create_graph_is_differentiable():
    x = oracle.to_tg(arr(3), requires_grad=True)
    tx = oracle.to_torch(arr(3), requires_grad=True)
    j = AF.jacobian(lambda v: v.exp() * v.sum(), x, create_graph=True)
    tj = TAF.jacobian(lambda v: v.exp() * v.sum(), tx, create_graph=True)
    assert j.requires_grad and tj.requires_grad
    oracle.assert_close(tg.autograd.grad(j.sum(), x)[0], torch.autograd.grad(tj.sum(), tx)[0])


@pytest.mark.parametrize("fn", [exp_reducer, lambda lib: lambda x: (x.exp(), x.sum())])
def test_jacobian_forward_mode_matches_torch(fn):
    run_both("jacobian", fn, arr(2, 2), vectorize=True, strategy="forward-mode")
    run_both("jacobian", two_outputs, (arr(2, 3), arr(4, seed=1)), vectorize=True,
             strategy="forward-mode")


def test_jacobian_argument_errors_match_torch():
    both_raise("jacobian", exp_reducer, arr(2, 2), strategy="forward-mode")  # needs vectorize
    both_raise("jacobian", exp_reducer, arr(2, 2), strategy="forward-mode", vectorize=True,
               create_graph=True)
    both_raise("jacobian", exp_reducer, arr(2, 2), strategy="forward-mode", vectorize=True,
               strict=True)
    both_raise("jacobian", exp_reducer, arr(2, 2), strategy="sideways")
    both_raise("jacobian", exp_reducer, arr(2, 2), strict=True, vectorize=True)
    both_raise("jacobian", lambda lib: lambda x: 3.0, arr(2))  # output not a Tensor
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor or a "
                                        "tuple of Tensors but the value at index 1 has type"):
        AF.jacobian(lambda x, y: x, (tg.ones(2), 3.0))


def test_jacobian_strict_errors_match_torch():
    both_raise("jacobian", lambda lib: lambda x, y: x * 2, (arr(3), arr(2, seed=1)), strict=True)
    both_raise("jacobian", lambda lib: lambda x: x.detach(), arr(3), strict=True)
    both_raise("jacobian", lambda lib: lambda x: x * 2, arr(3), strict=True, create_graph=True)
    run_both("jacobian", lambda lib: lambda x: x ** 2, arr(3), strict=True, create_graph=True)


# ----------------------------------------------------------------------------- hessian
@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_matches_torch(vectorize):
    run_both("hessian", pow_reducer, arr(2, 2), vectorize=vectorize)
    run_both("hessian", pow_adder_reducer, (arr(2), arr(2, seed=1)), vectorize=vectorize)
    run_both("hessian", mixed_scalar, (arr(3), arr(3, seed=1)), vectorize=vectorize)
    run_both("hessian", mixed_scalar, (arr(3), arr(3, seed=1)), create_graph=True,
             vectorize=vectorize)


def test_hessian_forward_over_reverse_matches_torch():
    run_both("hessian", pow_reducer, arr(2, 2), vectorize=True,
             outer_jacobian_strategy="forward-mode")
    run_both("hessian", mixed_scalar, (arr(3), arr(3, seed=1)), vectorize=True,
             outer_jacobian_strategy="forward-mode")
    run_both("hessian", lambda lib: lambda x: (x.sigmoid() * x.sqrt()).prod(), arr(4),
             vectorize=True, outer_jacobian_strategy="forward-mode")


def test_hessian_errors_match_torch():
    both_raise("hessian", lambda lib: lambda x: x * 2, arr(2))  # not a single element
    both_raise("hessian", lambda lib: lambda x: (x.sum(), x.sum()), arr(2))  # not a single Tensor
    both_raise("hessian", lambda lib: lambda x: (2 * x).sum(), arr(2), strict=True)  # linear
    both_raise("hessian", pow_reducer, arr(2), outer_jacobian_strategy="sideways")
    both_raise("hessian", pow_reducer, arr(2), outer_jacobian_strategy="forward-mode")


# ----------------------------------------------------------------------------- vjp / jvp
def test_vjp_matches_torch():
    run_both("vjp", exp_reducer, arr(4, 4), arr(4, seed=1))
    run_both("vjp", exp_reducer, arr(4, 4), arr(4, seed=1), create_graph=True)
    run_both("vjp", adder, (arr(2), arr(2, seed=1)), arr(2, seed=2))
    run_both("vjp", two_outputs, (arr(2, 3), arr(4, seed=1)), (arr(2, 3, seed=2), arr(4, seed=3)))
    run_both("vjp", pow_reducer, arr(3))  # v may be None for a single-element output
    run_both("vjp", lambda lib: lambda x, y: x * 2, (arr(3), arr(2, seed=1)), arr(3, seed=2))


def test_jvp_matches_torch():
    run_both("jvp", exp_reducer, arr(4, 4), arr(4, 4, seed=1))
    run_both("jvp", exp_reducer, arr(4, 4), arr(4, 4, seed=1), create_graph=True)
    run_both("jvp", adder, (arr(2), arr(2, seed=1)), (arr(2, seed=2), arr(2, seed=3)))
    run_both("jvp", two_outputs, (arr(2, 3), arr(4, seed=1)), (arr(2, 3, seed=2), arr(4, seed=3)))
    run_both("jvp", lambda lib: lambda x: x.exp() * 3, arr(1))  # v None: single-element input
    run_both("jvp", lambda lib: lambda x, y: (x * 2, y.sum() * 0 + 1.0 + x.sum() * 0),
             (arr(2), arr(3, seed=1)), (arr(2, seed=2), arr(3, seed=3)))


def test_v_checks_match_torch():
    both_raise("jvp", exp_reducer, arr(4, 4))
    both_raise("vjp", exp_reducer, arr(4, 4))
    both_raise("vhp", pow_reducer, arr(3))
    both_raise("hvp", pow_reducer, arr(3))
    both_raise("jvp", exp_reducer, arr(4, 4), arr(4, 3))
    both_raise("vjp", exp_reducer, arr(4, 4), arr(3))
    both_raise("vjp", adder, (arr(2), arr(2, seed=1)), (arr(2), arr(2)))
    both_raise("jvp", adder, (arr(2), arr(2, seed=1)), (arr(2),))
    both_raise("jvp", adder, (arr(2), arr(2, seed=1)), (arr(2), arr(3)))
    both_raise("vhp", pow_adder_reducer, (arr(2), arr(2, seed=1)), (arr(2), arr(3)))
    with pytest.raises(TypeError, match="The v given to vjp must be either a Tensor or a tuple of "
                                        "Tensors but the given v has type"):
        AF.vjp(lambda x: x * 2, tg.ones(2), [1.0, 1.0])


def test_strict_mode_errors_match_torch():
    unused = (arr(3), arr(2, seed=1))
    both_raise("vjp", lambda lib: lambda x, y: x * 2, unused, arr(3, seed=2), strict=True)
    both_raise("vjp", lambda lib: lambda x: x.detach() * 2, arr(3), arr(3, seed=2), strict=True)
    both_raise("jvp", lambda lib: lambda x, y: x * 2, unused, (arr(3), arr(2)), strict=True)
    both_raise("vhp", lambda lib: lambda x, y: (x ** 3).sum(), unused, (arr(3), arr(2)), strict=True)
    both_raise("hvp", lambda lib: lambda x: (2 * x).sum(), arr(3), arr(3, seed=2), strict=True)
    both_raise("vjp", lambda lib: lambda x: x * 2, arr(3), arr(3, seed=2), strict=True,
               create_graph=True)


# ----------------------------------------------------------------------------- vhp / hvp
@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_match_torch(name):
    run_both(name, pow_reducer, arr(2, 2), arr(2, 2, seed=1))
    run_both(name, pow_reducer, arr(2, 2), arr(2, 2, seed=1), create_graph=True)
    run_both(name, pow_adder_reducer, (arr(2), arr(2, seed=1)), (arr(2, seed=2), arr(2, seed=3)))
    run_both(name, mixed_scalar, (arr(3), arr(3, seed=1)), (arr(3, seed=2), arr(3, seed=3)))
    run_both(name, lambda lib: lambda x: x.exp().sum() * 2, arr(1))  # v None


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_vhp_hvp_output_checks_match_torch(name):
    both_raise(name, lambda lib: lambda x: x * 2, arr(2), arr(2))
    both_raise(name, lambda lib: lambda x: (x.sum(), x.sum()), arr(2), arr(2))


def test_inputs_captured_by_the_function_are_constants():
    """_grad_preprocess gives the function new objects: a tensor it closes over is a constant
    (pytorch issue 32576)."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    j = AF.jacobian(lambda v: v * x, x)
    np.testing.assert_allclose(j.numpy(), np.diag([1.0, 2.0]))
