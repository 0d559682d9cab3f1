"""gradcheck / gradgradcheck: they pass on correct gradients, and on wrong ones they fail with
PyTorch's message (or return False), name the output and input, and warn on float32."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autograd import GradcheckError, gradcheck, gradgradcheck
from tracegrad.ops.registry import OpDef


def _leaf(shape, seed=0, dtype=tg.float64):
    return tg.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype,
                     requires_grad=True)


def _op(name, impl, vjp, save=(0,)):
    """An unregistered primitive with a chosen (possibly wrong) VJP rule."""
    return OpDef(name, infer=lambda x: (tuple(x.shape), x.dtype), impl=impl, vjp=vjp, save=save)


CUBE = _op("cube", lambda x: x ** 3, lambda ctx, g: (g * 3 * ctx.input(0) * ctx.input(0),))
BAD_CUBE = _op("bad_cube", lambda x: x ** 3, lambda ctx, g: (g * 2 * ctx.input(0) * ctx.input(0),))
# right first derivative, wrong second: the rule treats x as a constant by detaching it
CUBE_DETACHED = _op("cube_detached", lambda x: x ** 3,
                    lambda ctx, g: (g * 3 * ctx.input(0).detach() * ctx.input(0).detach(),))


def test_passes_on_correct_gradients():
    x, y = _leaf((3, 4)), _leaf((4,), 1)
    assert gradcheck(lambda a, b: (a * b).tanh().sum(1), (x, y))
    assert gradcheck(CUBE, (x,))
    assert gradgradcheck(CUBE, (x,))
    assert gradgradcheck(lambda a, b: (a @ b).exp(), (x, y))


def test_accepts_a_single_tensor_and_non_tensor_arguments():
    x = _leaf((2, 3))
    assert gradcheck(lambda a: a.sin(), x)
    assert gradcheck(lambda a, k, flag: a.pow(k) if flag else a, (x, 3, True))


def test_mismatch_message_names_output_and_input():
    x, y = _leaf((3,)), _leaf((3,), 1)
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 1") as exc:
        gradcheck(lambda a, b: a * BAD_CUBE(b), (x, y))
    assert "numerical:" in str(exc.value) and "analytical:" in str(exc.value)
    assert isinstance(exc.value, RuntimeError)
    with pytest.raises(GradcheckError, match="for output 1 with respect to input 0"):
        gradcheck(lambda a: (a.exp(), BAD_CUBE(a)), (x,))


def test_raise_exception_false_returns_false():
    assert gradcheck(BAD_CUBE, (_leaf((2,)),), raise_exception=False) is False
    assert gradgradcheck(CUBE_DETACHED, (_leaf((2,)),), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_second_derivative():
    x = _leaf((3,))
    assert gradcheck(CUBE_DETACHED, (x,))  # first order is right
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(CUBE_DETACHED, (x,))


def test_gradgradcheck_with_given_grad_outputs():
    x = _leaf((2, 2))
    go = _leaf((2, 2), 5)
    assert gradgradcheck(lambda a: a * a * a, (x,), (go,))


def test_tolerances_are_used():
    x = _leaf((3,))
    nearly = _op("nearly", lambda a: a * 2, lambda ctx, g: (g * 2.01,), save=())
    assert not gradcheck(nearly, (x,), raise_exception=False)
    assert gradcheck(nearly, (x,), rtol=1e-2)
    assert gradcheck(nearly, (x,), atol=2e-2, rtol=0)


def test_warns_for_inputs_that_are_not_float64():
    x = _leaf((3,), dtype=tg.float32)
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (tg.ones(2, dtype=tg.float64),))


def test_outputs_independent_of_inputs_and_integer_outputs():
    x = _leaf((3,))
    assert gradcheck(lambda a: (a.sum(), tg.ones(2, dtype=tg.float64), a.argmax()), (x,))


def test_inputs_are_restored_after_perturbation():
    x = _leaf((4,))
    before = x.detach().numpy().copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda a: a.exp(), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x.grad is None


def test_nondeterministic_backward_is_reported():
    calls = []

    def vjp(ctx, g):
        calls.append(1)
        return (g * (2.0 + 1e-3 * len(calls)),)

    noisy = _op("noisy", lambda a: a * 2, vjp, save=())
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(noisy, (_leaf((2,)),), atol=1e-1)
    assert gradcheck(noisy, (_leaf((2,)),), atol=1e-1, nondet_tol=1.0)


def test_unsupported_modes_say_so():
    with pytest.raises(NotImplementedError, match="check_batched_forward_grad"):
        gradcheck(lambda a: a, (_leaf((2,)),), check_batched_forward_grad=True)
    with pytest.raises(NotImplementedError, match="sparse"):
        gradcheck(lambda a: a, (_leaf((2,)),), masked=True)


class _WrongRules(tg.autograd.Function):
    """x^2 with a backward that says 3x and a JVP that says 1: each check must catch its own."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 3 * a * g

    @staticmethod
    def jvp(ctx, t):
        return t


@pytest.mark.parametrize("mode", [dict(), dict(fast_mode=True), dict(check_forward_ad=True),
                                  dict(check_forward_ad=True, fast_mode=True), dict(check_batched_grad=True)],
                         ids=str)
def test_gradcheck_modes_pass_right_rules_and_catch_wrong_ones(mode):
    rng = np.random.default_rng(3)
    x = tg.tensor(rng.random(3), dtype=tg.float64, requires_grad=True)
    w = tg.tensor(rng.random((3, 2)), dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(lambda a, b: (a.sin() @ b).tanh(), (x, w), **mode)
    assert tg.autograd.gradgradcheck(lambda a, b: (a.sin() @ b).tanh(), (x, w),
                                     check_fwd_over_rev=mode.get("check_forward_ad", False),
                                     fast_mode=mode.get("fast_mode", False),
                                     check_batched_grad=mode.get("check_batched_grad", False))
    backward_only = dict(mode, check_backward_ad=True)
    assert not tg.autograd.gradcheck(_WrongRules.apply, (x,), raise_exception=False, **backward_only)
    if mode.get("check_forward_ad"):
        assert not tg.autograd.gradcheck(_WrongRules.apply, (x,), raise_exception=False,
                                         **dict(mode, check_backward_ad=False))
