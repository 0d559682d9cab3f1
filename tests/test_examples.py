"""The examples in examples/ run and do what they say."""
import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_custom_function_example_trains():
    losses = _load("custom_function").main(steps=20)
    assert losses[-1] < losses[0]


def test_loss_and_grad_example_descends():
    p = _load("loss_and_grad").main()
    assert p.tolist() != [-1.5, 2.0]


def test_train_digits_example_runs_when_sklearn_is_installed():
    pytest.importorskip("sklearn")
    _load("train_digits").main(epochs=2)


def test_demo_runs_quietly(capsys):
    from tracegrad.tools.demo import run

    acc = run(backend="c", epochs=1, quiet=True)
    out = capsys.readouterr().out
    assert "compile (first call)" in out and "generated" in out
    assert acc > 0.5
