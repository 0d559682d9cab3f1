"""Anomaly detection (tg.autograd.detect_anomaly / set_detect_anomaly) against torch: the
reference example (forward traceback of the failing node shown in a warning), the NaN check
and its message, check_nan=False, the mode switches and their warnings."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402


def run_recorded(fn):
    """(exception or None, [warning messages]) of ``fn()``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
            exc = None
        except Exception as e:
            exc = e
    return exc, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def make_myfunc(lib):
    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, gO):
            # Error during the backward pass
            raise RuntimeError("Some error in backward")

    def run_fn(a):
        out = MyFunc.apply(a)
        return out.sum()

    return run_fn


def test_reference_example_without_anomaly_mode():
    for lib in (tg, torch):
        run_fn = make_myfunc(lib)
        inp = lib.rand(10, 10, requires_grad=True)
        out = run_fn(inp)
        exc, msgs = run_recorded(out.backward)
        assert isinstance(exc, RuntimeError) and str(exc) == "Some error in backward"
        assert not any("Error detected" in m for m in msgs)


def test_reference_example_with_anomaly_mode_shows_forward_traceback():
    for lib in (tg, torch):
        run_fn = make_myfunc(lib)

        def body():
            with lib.autograd.detect_anomaly():
                inp = lib.rand(10, 10, requires_grad=True)
                out = run_fn(inp)
                out.backward()

        exc, msgs = run_recorded(body)
        assert isinstance(exc, RuntimeError) and str(exc) == "Some error in backward"
        assert msgs[0].startswith("Anomaly Detection has been enabled.")
        detected = [m for m in msgs if m.startswith("Error detected in MyFuncBackward. Traceback of "
                                                    "forward call that caused the error:")]
        assert detected, (lib.__name__, msgs)
        trace = detected[0]
        assert "out = MyFunc.apply(a)" in trace and "out = run_fn(inp)" in trace
        assert __file__ in trace


def test_anomaly_traceback_for_a_primitive_node():
    def body(lib):
        def failing_unpack(t):
            raise ValueError("bad unpack")

        with lib.autograd.detect_anomaly():
            x = lib.ones(3, requires_grad=True)
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, failing_unpack):
                y = x.exp()  # the forward line the warning must show
            (y * 2).sum().backward()

    for lib in (tg, torch):
        exc, msgs = run_recorded(lambda: body(lib))
        assert isinstance(exc, ValueError) and str(exc) == "bad unpack"
        detected = [m for m in msgs if m.startswith("Error detected in ExpBackward0.")]
        assert detected and "y = x.exp()" in detected[0], (lib.__name__, msgs)


def test_nan_check_names_node_and_output_like_torch():
    def body(lib):
        with lib.autograd.detect_anomaly():
            x = lib.tensor([0.0, 1.0], requires_grad=True)
            y = lib.tensor([1.0, 0.0], requires_grad=True)
            (x * 0 + (y * 0).sqrt()).sum().backward()

    (exc, msgs), (texc, tmsgs) = run_recorded(lambda: body(tg)), run_recorded(lambda: body(torch))
    assert type(exc) is type(texc) is RuntimeError
    assert str(exc) == str(texc) == "Function 'MulBackward0' returned nan values in its 0th output."
    assert any(m.startswith("Error detected in MulBackward0.") for m in msgs)
    assert any(m.startswith("Error detected in MulBackward0.") for m in tmsgs)


def test_nan_check_reports_the_output_index():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib in (tg, torch):
            with lib.autograd.detect_anomaly():
                a = lib.tensor([float("inf")], requires_grad=True)
                b = lib.tensor([0.0], requires_grad=True)
                with pytest.raises(RuntimeError, match="Function 'MulBackward0' returned nan values "
                                                       "in its 1th output."):
                    # the gradient reaching a * b is 0: for a it is 0 * b = 0, for b 0 * inf = nan
                    ((a * b) * 0).sum().backward()


def test_check_nan_false_lets_nan_through():
    for lib in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(check_nan=False):
                x = lib.tensor([0.0, 1.0], requires_grad=True)
                x.sqrt().mul(0).sum().backward()
        assert np.isnan(np.asarray(x.grad.tolist())[0])


def test_set_detect_anomaly_as_call_and_context_manager():
    for lib in (tg, torch):
        is_on = lib.is_anomaly_enabled if lib is torch else tg.autograd.is_anomaly_enabled
        check_nan = (lib.is_anomaly_check_nan_enabled if lib is torch
                     else tg.autograd.is_anomaly_check_nan_enabled)
        assert not is_on()
        lib.autograd.set_detect_anomaly(True)
        assert is_on()
        with lib.autograd.set_detect_anomaly(False):
            assert not is_on()
        assert is_on()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert is_on() and not check_nan()
        assert check_nan()
        lib.autograd.set_detect_anomaly(False)
        assert not is_on()


def test_detect_anomaly_warns_and_restores():
    for lib in (tg, torch):
        is_on = lib.is_anomaly_enabled if lib is torch else tg.autograd.is_anomaly_enabled
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will "
                                             "increase the runtime and should only be enabled for "
                                             "debugging."):
            cm = lib.autograd.detect_anomaly()
        with cm:
            assert is_on()
        assert not is_on()


def test_backward_in_anomaly_mode_of_a_graph_built_outside_it():
    run_fn = make_myfunc(tg)
    out = run_fn(tg.rand(2, requires_grad=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tg.autograd.set_detect_anomaly(True):
            with pytest.raises(RuntimeError, match="Some error in backward"):
                out.backward()
    assert any("No forward pass information available" in str(w.message) for w in caught)


def test_no_false_alarm_on_a_clean_backward():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            x = tg.tensor([1.0, 2.0], requires_grad=True)
            (x.exp() * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])),
                               rtol=1e-6)
