"""Saved-tensor hooks and graph hooks (tg.autograd.graph) against torch.autograd.graph: every
example of the reference page (saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,
register_multi_grad_hook, allow_mutation_on_saved_tensors) plus nesting, where exceptions
surface, and PyTorch's error messages."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import oracle  # noqa: E402
import tracegrad as tg  # noqa: E402


def _err(fn):
    try:
        fn()
    except Exception as e:
        return type(e), str(e)
    return None


def both_raise(body):
    """``body(lib)`` must raise the same error type and message for tracegrad and torch."""
    a, b = _err(lambda: body(tg)), _err(lambda: body(torch))
    assert a is not None and b is not None, (a, b)
    assert a == b, f"tracegrad: {a}\ntorch:     {b}"


def both_print(body, capsys):
    """``body(lib)`` prints the same lines for both libraries (torch. names normalised)."""
    body(tg)
    ours = capsys.readouterr().out
    body(torch)
    ref = capsys.readouterr().out
    return ours, ref


# ----------------------------------------------------------------------------- saved_tensors_hooks
def test_saved_tensors_hooks_reference_example(capsys):
    def body(lib):
        def pack_hook(x):
            print("Packing", x)
            return x

        def unpack_hook(x):
            print("Unpacking", x)
            return x

        a = lib.ones(5, requires_grad=True)
        b = lib.ones(5, requires_grad=True) * 2
        with lib.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
            y = a * b
        print("--- backward")
        y.sum().backward()
        print(a.grad)

    ours, ref = both_print(body, capsys)
    # the order in which MulBackward0 saves self/other is an implementation detail (PyTorch's
    # own page and PyTorch 2.x disagree); the set of lines in each phase must match
    for phase_ours, phase_ref in zip(ours.split("--- backward"), ref.split("--- backward")):
        assert sorted(phase_ours.strip().splitlines()) == sorted(phase_ref.strip().splitlines())


def test_saved_attribute_of_grad_fn_reference_example(capsys):
    def body(lib):
        a = lib.tensor([0., 0., 0.], requires_grad=True)
        b = a.exp()
        print(isinstance(b.grad_fn, lib.autograd.graph.Node))
        print(lib.allclose(b.grad_fn._saved_result, b))
        with lib.autograd.graph.saved_tensors_hooks(lambda x: print("Packing", x) or x,
                                                    lambda x: print("Unpacking", x) or x):
            c = a.exp()
        print(c.grad_fn._saved_result)

    ours, ref = both_print(body, capsys)
    assert ours == ref


def test_inner_pair_of_nested_hooks_wins():
    def body(lib):
        log = []
        a = lib.ones(3, requires_grad=True)
        outer = lib.autograd.graph.saved_tensors_hooks(lambda x: log.append("outer") or x,
                                                       lambda x: log.append("outer-unpack") or x)
        inner = lib.autograd.graph.saved_tensors_hooks(lambda x: log.append("inner") or x,
                                                       lambda x: log.append("inner-unpack") or x)
        with outer:
            with inner:
                y = (a * a).sum()
            z = a.exp().sum()
        (y + z).backward()
        return sorted(log), a.grad

    (log, g), (tlog, tg_) = body(tg), body(torch)
    assert log == tlog
    oracle.assert_close(g, tg_)


def test_hooks_can_store_something_else():
    """Packing to a NumPy copy and rebuilding in unpack gives the same gradients."""
    a = oracle.to_tg(np.random.default_rng(0).standard_normal(4), requires_grad=True)
    ta = oracle.to_torch(np.random.default_rng(0).standard_normal(4), requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t.detach().numpy().copy(),
                                               lambda arr: tg.from_numpy(arr)):
        y = (a.sin() * a.exp()).sum()
    y.backward()
    (ta.sin() * ta.exp()).sum().backward()
    oracle.assert_close(a.grad, ta.grad)


def test_pack_error_surfaces_in_forward_and_unpack_error_in_backward():
    def boom(msg):
        def hook(x):
            raise ValueError(msg)
        return hook

    for lib in (tg, torch):
        a = lib.ones(3, requires_grad=True)
        with pytest.raises(ValueError, match="boom pack"):
            with lib.autograd.graph.saved_tensors_hooks(boom("boom pack"), lambda x: x):
                a * a
        with lib.autograd.graph.saved_tensors_hooks(lambda x: x, boom("boom unpack")):
            y = (a * a).sum()  # forward succeeds
        with pytest.raises(ValueError, match="boom unpack"):
            y.backward()


def test_pack_hook_modifying_its_input_errors_like_torch():
    def body(lib):
        a = lib.ones(3, requires_grad=True)
        b = a.detach().clone()
        with lib.autograd.graph.saved_tensors_hooks(lambda x: x.mul_(2), lambda x: x):
            b * a

    both_raise(body)


def test_unpack_returning_a_non_tensor_errors_like_torch():
    def body(lib):
        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda x: 1, lambda x: x):
            y = (a * a).sum()
        y.backward()

    both_raise(body)


def test_unpack_runs_at_every_backward_with_retain_graph():
    calls = []
    a = tg.ones(3, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: calls.append(1) or x):
        y = a.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    assert len(calls) == 2
    np.testing.assert_allclose(a.grad.numpy(), 2 * np.e * np.ones(3), rtol=1e-6)


# ----------------------------------------------------------------------------- save_on_cpu
def test_save_on_cpu_reference_example():
    """The page's example (device="cuda" dropped: tracegrad and this torch are CPU-only)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(5) for _ in range(3)]

    def run(lib, mk):
        a, b, c = (mk(x, True) for x in arrays)

        def f(a, b, c):
            prod_1 = a * b  # a and b are saved as they are
            with lib.autograd.graph.save_on_cpu():
                prod_2 = prod_1 * c  # prod_1 and c are saved through the hooks
            y = prod_2 * a
            return y

        y = f(a, b, c)
        y.sum().backward()
        return [t.grad for t in (a, b, c)]

    for g, w in zip(run(tg, oracle.to_tg), run(torch, oracle.to_torch)):
        oracle.assert_close(g, w)


def test_save_on_cpu_keeps_the_tensor_itself_on_cpu():
    seen = []
    a = tg.ones(3, requires_grad=True)
    hooks = tg.autograd.graph.save_on_cpu(pin_memory=True)
    pack = hooks.pack_hook
    hooks.pack_hook = lambda t: seen.append(t) or pack(t)
    with hooks:
        y = (a * 2).sum()
    assert seen and seen[0] is a  # no copy on the CPU
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0, 2.0])


# ----------------------------------------------------------------------------- disable_saved_tensors_hooks
def test_disable_saved_tensors_hooks_reference_example():
    def body(lib):
        message = "saved tensors default hooks are disabled"
        with lib.autograd.graph.disable_saved_tensors_hooks(message):
            # Raises RuntimeError: saved tensors default hooks are disabled
            with lib.autograd.graph.save_on_cpu():
                pass

    both_raise(body)


def test_disable_while_hooks_are_active_errors_when_saving():
    def body(lib):
        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            with lib.autograd.graph.disable_saved_tensors_hooks("nope"):
                a * a

    both_raise(body)


def test_nested_disable_restores_the_outer_message():
    def body(lib):
        with lib.autograd.graph.disable_saved_tensors_hooks("outer"):
            with lib.autograd.graph.disable_saved_tensors_hooks("inner"):
                pass
            with lib.autograd.graph.save_on_cpu():
                pass

    both_raise(body)
    with tg.autograd.graph.disable_saved_tensors_hooks("x"):
        pass
    with tg.autograd.graph.save_on_cpu():  # enabled again after the context
        pass


# ----------------------------------------------------------------------------- register_multi_grad_hook
def test_register_multi_grad_hook_reference_example(capsys):
    def body(lib):
        a = lib.rand(2, 3, requires_grad=True)
        b = lib.rand(2, 3, requires_grad=True)
        c = a * b
        d = a * b

        def fn(grads):
            print([g is not None for g in grads])

        lib.autograd.graph.register_multi_grad_hook((a, b, c, d), fn)
        c.sum().backward(retain_graph=True)
        c.sum().backward(inputs=(a,), retain_graph=True)
        (c + d).sum().backward(retain_graph=True)
        return a, b, c, d

    ours, ref = both_print(body, capsys)
    assert ours == ref
    assert ours.splitlines()[:2] == ["[True, True, True, False]", "[True, False, True, False]"]


def test_multi_grad_hook_with_autograd_grad(capsys):
    """PyTorch refuses leaves in a multi-grad hook during autograd.grad ("not supported");
    tracegrad supports it: captured inputs count as computed."""
    a = tg.rand(2, 3, requires_grad=True)
    b = tg.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    seen = []
    tg.autograd.graph.register_multi_grad_hook((a, b, c, d),
                                               lambda gs: seen.append([g is not None for g in gs]))
    tg.autograd.grad(d.sum(), (b,))
    assert seen == [[False, True, False, True]]


def test_multi_grad_hook_receives_the_gradients():
    x = oracle.to_tg(np.arange(3.0), requires_grad=True)
    got = []
    tg.autograd.graph.register_multi_grad_hook([x], lambda gs: got.append(gs[0]))
    (x * x).sum().backward()
    np.testing.assert_allclose(got[0].numpy(), [0.0, 2.0, 4.0])


def test_multi_grad_hook_mode_any_and_remove(capsys):
    def body(lib):
        a = lib.ones(2, requires_grad=True)
        b = lib.ones(2, requires_grad=True)
        h = lib.autograd.graph.register_multi_grad_hook((a, b), lambda g: print("any", g.tolist()),
                                                        mode="any")
        (a * 2 + b * 3).sum().backward()
        (a * 5).sum().backward()
        h.remove()
        (a * 7).sum().backward()

    ours, ref = both_print(body, capsys)
    assert ours == ref


def test_multi_grad_hook_invalid_mode_errors_like_torch():
    both_raise(lambda lib: lib.autograd.graph.register_multi_grad_hook(
        (lib.ones(1, requires_grad=True),), print, mode="some"))


def test_hooks_of_tensors_not_needed_for_inputs_do_not_fire():
    """With backward(inputs=...), tensors off the needed path get no hook call (as PyTorch)."""
    def body(lib):
        calls = []
        a = lib.ones(2, requires_grad=True)
        b = lib.ones(2, requires_grad=True)
        a.register_hook(lambda g: calls.append("a"))
        b.register_hook(lambda g: calls.append("b"))
        (a * b).sum().backward(inputs=(a,))
        return calls

    assert body(tg) == body(torch) == ["a"]


# ----------------------------------------------------------------------------- allow_mutation_on_saved_tensors
def test_allow_mutation_on_saved_tensors_reference_example():
    def body(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            # forward
            a = lib.ones(2, 3, requires_grad=True)
            b = a.clone()
            out = (b ** 2).sum()
            mutated = b.sin_()
            # backward
            out.sum().backward()
        return a.grad, mutated

    (g, m), (tg_, tm) = body(tg), body(torch)
    oracle.assert_close(g, tg_)
    oracle.assert_close(m, tm)
    assert m.grad_fn.name() == tm.grad_fn.name() == "SinBackward0"


def test_without_the_context_the_mutation_is_an_error():
    for lib in (tg, torch):
        a = lib.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


def test_allow_mutation_through_a_view_and_several_saves():
    def body(lib, mk):
        x = mk(np.linspace(0.1, 1.2, 6).reshape(2, 3), True)
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            b = x * 1.0
            y = (b.exp() * b).sum()  # b saved twice, its exp saved as an output
            b[0].mul_(3.0)  # mutate through a view
            b.add_(1.0)
            y.backward()
        return x.grad, b

    for got, want in zip(body(tg, oracle.to_tg), body(torch, oracle.to_torch)):
        oracle.assert_close(got, want)


def test_allow_mutation_errors_like_torch():
    def nested(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            with lib.autograd.graph.allow_mutation_on_saved_tensors():
                pass

    both_raise(nested)

    def backward_outside(lib):
        with lib.autograd.graph.allow_mutation_on_saved_tensors():
            a = lib.ones(3, requires_grad=True)
            b = a.clone()
            out = (b ** 2).sum()
            b.sin_()
        out.backward()

    both_raise(backward_outside)


def test_pack_hook_that_runs_ops_does_not_reenter_itself():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tg, torch):
        calls = []

        def pack(t):
            calls.append(1)
            return t * 1.0

        a = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = (a * a).sum()
        y.backward()
        results.append((len(calls), a.grad.tolist()))
    assert results[0] == results[1]
