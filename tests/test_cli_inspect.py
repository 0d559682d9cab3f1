"""Inspection: Program attributes, tg.explain, TRACEGRAD_LOG topics, and
``python -m tracegrad inspect path/to/file.py:function --arg x=f32[32,64]``."""
from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import tracegrad as tg
from tracegrad.tools import inspect as inspect_cmd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL_FILE = textwrap.dedent('''
    import tracegrad as tg

    tg.manual_seed(0)
    model = tg.nn.Linear(8, 1)


    def step(x, y, lr):
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
                p.grad = None
        return loss


    def loss_fn(x, w):
        return (x @ w).tanh().sum()
''')


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL_FILE)
    return str(path)


# ----------------------------------------------------------------------------- Program
def test_program_inspection_attributes():
    cf = tg.compile(lambda x, w: (x @ w).tanh().sum(), backend="interpreter")
    x, w = tg.ones(4, 3), tg.ones(3, 2, requires_grad=True)
    prog = cf.inspect(x, w)
    assert cf.programs == [prog] and cf.inspect(x, w) is prog  # reused while guards hold
    assert prog.graph.name == "<lambda>" and prog.forward.name == "<lambda>_forward"
    assert prog.backward.name == "<lambda>_backward"
    assert all(hasattr(s, a) for s in prog.saved for a in ("name", "shape", "dtype", "bytes"))
    assert "interpreter backend" in prog.source
    assert prog.guards == ["grad_mode == True", "x: Tensor f32[4, 3] requires_grad=False",
                           "w: Tensor f32[3, 2] requires_grad=True", "autocast state == None"]
    assert str(prog).startswith(str(prog.forward)) and prog.to_dot().startswith("digraph")


def test_guards_name_lifted_tensors_and_grads():
    w = tg.ones(2, requires_grad=True)

    def f(x):
        (w * x).sum().backward()
        return x

    guards = tg.compile(f, backend="interpreter").inspect(tg.ones(2)).guards
    assert "w: the same tensor, f32[2] requires_grad=True" in guards
    assert "w.grad is None" in guards


def test_explain_counts_ops_over_forward_and_backward():
    report = tg.explain(lambda x: (x.exp() * x).sum(), tg.ones(3, requires_grad=True))
    assert report.graph_count == 1 and report.graph_break_count == 0
    # the min-cut saves x and recomputes exp(x) in the backward: two exp nodes run
    assert report.op_counts == {"mul": 4, "exp": 2, "add": 1, "expand": 1, "sum": 1}
    text = str(report)
    assert text.startswith("Graph count: 1\nGraph break count: 0\nOp counts: ")
    assert "saved for backward" in text


def test_explain_accepts_compiled_functions_and_modules():
    model = tg.nn.Linear(3, 2)
    assert tg.explain(model, tg.ones(1, 3)).op_counts["matmul"] == 2  # forward and weight grad
    assert tg.explain(tg.compile(model, backend="interpreter"), tg.ones(1, 3)).graph_count == 1
    cf = tg.compile(lambda x: x + 1, backend="interpreter")
    assert tg.explain(cf, tg.ones(2)).op_counts == {"add": 1}


@pytest.mark.parametrize("topic,expected", [
    ("ir", "ir] captured <lambda>\n<lambda>(%0:f32[2] arg x):"),
    ("code", "code] # interpreter backend"),
    ("cache", "cache] <lambda>: hit, program 1 of 1"),
    ("guards", "guards] retracing <lambda>: program 1: argument x: expected f32[2]"),
])
def test_log_topics(monkeypatch, caplog, topic, expected):
    monkeypatch.setenv("TRACEGRAD_LOG", topic)
    cf = tg.compile(lambda x: x * 2, backend="interpreter")
    with caplog.at_level(logging.INFO, logger="tracegrad"):
        cf(tg.ones(2))
        cf(tg.ones(2))
        cf(tg.ones(3))
    assert expected in caplog.text
    others = {"ir", "code", "cache", "guards"} - {topic}
    assert not any(f"{o}] " in caplog.text for o in others)


# ----------------------------------------------------------------------------- the command
def test_parse_arg_specs():
    name, t = inspect_cmd.parse_arg("x=f32[32,64]")
    assert name == "x" and t.shape == (32, 64) and t.dtype is tg.float32 and not t.requires_grad
    _, t = inspect_cmd.parse_arg("w=f64[3]:grad")
    assert t.dtype is tg.float64 and t.requires_grad
    _, t = inspect_cmd.parse_arg("s=f32[]")
    assert t.shape == ()
    _, t = inspect_cmd.parse_arg("i=i64[4]")
    assert t.dtype is tg.int64 and t.tolist() == [0, 0, 0, 0]
    assert inspect_cmd.parse_arg("n=3") == ("n", 3)
    assert inspect_cmd.parse_arg("mode=mean") == ("mode", "mean")
    with pytest.raises(ValueError, match="expected NAME=VALUE"):
        inspect_cmd.parse_arg("f32[3]")
    with pytest.raises(ValueError, match="only floating point tensors can require grad"):
        inspect_cmd.parse_arg("i=i64[3]:grad")


def test_inspect_prints_the_ir(model_file, capsys):
    rc = inspect_cmd.main([f"{model_file}:step", "--arg", "x=f32[32,8]", "--arg", "y=f32[32,1]",
                           "--arg", "lr=0.1"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("step(%0:f32[32,8] arg x, %1:f32[32,1] arg y, "
                          "%2:f32[1,8] lifted model.weight, %3:f32[1] lifted model.bias):")
    assert "  model.weight <- %" in out and "mul 0.1:f32" in out


def test_inspect_differentiable_function_prints_saved_report(model_file, capsys):
    rc = inspect_cmd.main([f"{model_file}:loss_fn", "--arg", "x=f32[4,3]", "--arg", "w=f32[3,2]:grad"])
    out = capsys.readouterr().out
    assert rc == 0 and "loss_fn_backward(" in out
    assert "saved for backward (annotations): 2 values, 80 bytes" in out


def test_inspect_errors(model_file, capsys):
    assert inspect_cmd.main([f"{model_file}:nope"]) == 2
    assert "has no attribute 'nope'" in capsys.readouterr().err
    assert inspect_cmd.main([f"{model_file}:step", "--arg", "x=f32[2,8]"]) == 2
    assert "missing --arg for parameter(s) y, lr" in capsys.readouterr().err
    assert inspect_cmd.main(["/no/such/file.py:f"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_inspect_without_graphviz_writes_dot(model_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    svg = tmp_path / "g.svg"
    rc = inspect_cmd.main([f"{model_file}:loss_fn", "--arg", "x=f32[4,3]", "--arg", "w=f32[3,2]",
                           "--svg", str(svg)])
    assert rc == 0 and not svg.exists()
    assert (tmp_path / "g.dot").read_text().startswith('digraph "loss_fn"')
    assert "Graphviz 'dot' is not installed" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz dot is not installed")
def test_inspect_writes_svg_with_graphviz(model_file, tmp_path):
    svg = tmp_path / "g.svg"
    rc = inspect_cmd.main([f"{model_file}:loss_fn", "--arg", "x=f32[4,3]", "--arg", "w=f32[3,2]",
                           "--svg", str(svg)])
    assert rc == 0 and "<svg" in svg.read_text()


def test_python_dash_m_tracegrad_inspect(model_file):
    proc = subprocess.run([sys.executable, "-m", "tracegrad", "inspect", f"{model_file}:loss_fn",
                           "--arg", "x=f32[4,3]", "--arg", "w=f32[3,2]"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("loss_fn(%0:f32[4,3] arg x, %1:f32[3,2] arg w):")
