"""Grad modes against PyTorch: no_grad, enable_grad, set_grad_enabled and inference_mode as
context managers, decorators (with and without parentheses, on generators) and statements;
inference tensors and their errors."""
import threading

import pytest

import tracegrad as tg
from autograd_oracle import raises_both, run_both

torch = pytest.importorskip("torch")


def leaf(lib, values):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def test_context_managers_nest():
    def prog(lib):
        x = leaf(lib, [1.0])
        seen = [lib.is_grad_enabled()]
        with lib.no_grad():
            a = x * 2
            seen.append(lib.is_grad_enabled())
            with lib.enable_grad():
                b = x * 2
                seen.append(lib.is_grad_enabled())
            with lib.set_grad_enabled(True):
                c = x * 2
            d = x * 2
        seen.append(lib.is_grad_enabled())
        return seen, a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad

    run_both(prog, torch)


def test_decorators_with_and_without_parentheses():
    def prog(lib):
        x = leaf(lib, [1.0])

        @lib.no_grad()
        def f1(t):
            return t * 2

        @lib.no_grad
        def f2(t):
            return t * 2

        @lib.enable_grad
        def f3(t):
            return t * 2

        @lib.set_grad_enabled(False)
        def f4(t):
            return t * 2

        @lib.inference_mode
        def f5(t):
            return t * 2

        @lib.inference_mode()
        def f6(t):
            return t * 2

        after_decorating = lib.is_grad_enabled()
        with lib.no_grad():
            r3 = f3(x)
        return (f1(x).requires_grad, f2(x).requires_grad, r3.requires_grad, f4(x).requires_grad,
                f5(x).is_inference(), f6(x).is_inference(), after_decorating, f1.__name__)

    run_both(prog, torch)


def test_decorated_generator_runs_body_in_mode_only():
    def prog(lib):
        x = leaf(lib, [1.0])
        inside = []

        @lib.no_grad()
        def gen(n):
            for _ in range(n):
                inside.append(lib.is_grad_enabled())
                yield x * 2

        outs = []
        for y in gen(2):
            outs.append((y.requires_grad, lib.is_grad_enabled()))
        return inside, outs

    run_both(prog, torch)


def test_set_grad_enabled_as_a_statement():
    def prog(lib):
        x = leaf(lib, [1.0])
        lib.set_grad_enabled(False)
        a = x * 2
        off = lib.is_grad_enabled()
        lib.set_grad_enabled(True)
        b = x * 2
        return a.requires_grad, off, b.requires_grad, lib.is_grad_enabled()

    run_both(prog, torch)


def test_mode_restored_after_exception():
    def prog(lib):
        try:
            with lib.no_grad():
                raise KeyError("x")
        except KeyError:
            pass
        return lib.is_grad_enabled()

    run_both(prog, torch)


def test_in_place_on_leaf_allowed_under_no_grad():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        with lib.no_grad():
            x.mul_(3)
            x[0] = 7.0
        (x * x).sum().backward()
        return x, x.is_leaf, x.grad, x._version

    run_both(prog, torch)


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["thread"] = tg.is_grad_enabled()

    with tg.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        seen["main"] = tg.is_grad_enabled()
    assert seen == {"thread": True, "main": False}


# ----------------------------------------------------------------------------- inference mode
def test_inference_mode_tensors():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        with lib.inference_mode():
            inside = lib.is_inference_mode_enabled(), lib.is_grad_enabled()
            it = lib.ones(2, dtype=lib.float64)
            y = x * 2
            it.add_(1)  # in-place inside inference mode is fine
            with lib.inference_mode(False):
                z = lib.ones(1)
        with lib.no_grad():
            n = x * 2
        s = (x + it).sum()  # using an inference tensor where nothing is saved is fine
        s.backward()
        return (inside, it.is_inference(), y.is_inference(), y.requires_grad, z.is_inference(),
                n.is_inference(), x.is_inference(), lib.is_inference_mode_enabled(), x.grad, it)

    run_both(prog, torch)


def test_inference_tensor_errors_outside_inference_mode():
    def make(lib):
        with lib.inference_mode():
            return lib.ones(2, dtype=lib.float64)

    raises_both(lambda lib: (leaf(lib, [1.0, 2.0]) * make(lib)).sum().backward(), torch,
                match="Inference tensors cannot be saved for backward")
    raises_both(lambda lib: make(lib).add_(1), torch,
                match="Inplace update to inference tensor outside InferenceMode is not allowed")
    raises_both(lambda lib: make(lib).requires_grad_(), torch,
                match="Setting requires_grad=True on inference tensor outside InferenceMode")


def test_inference_tensor_clone_is_normal():
    def prog(lib):
        with lib.inference_mode():
            it = lib.ones(2, dtype=lib.float64)
        c = it.clone()
        x = leaf(lib, [1.0, 2.0])
        (x * c).sum().backward()
        return c.is_inference(), x.grad

    run_both(prog, torch)
