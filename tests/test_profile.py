"""compiled.profile(*args) and ``tracegrad profile``: a per-kernel profile of C programs
(tracegrad/compiler/profile/). The machine's peak is a fixed one here (remember_peak), except
in the one slow test that measures it."""
from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.compiler.profile import (MachinePeak, ProfileError, machine_peak, measure, profile_call,
                                        remember_peak)
from tracegrad.tools.cli import main

FAKE = MachinePeak(fma_gflops=200.0, bandwidth_gbs=40.0, fma_gflops_one_core=100.0,
                   bandwidth_gbs_one_core=25.0, cores=2, cpu="test machine")


@pytest.fixture(autouse=True)
def fake_peak():
    remember_peak(FAKE)  # (in the session's private cache directory: tests/conftest.py)


def kernel_count(exe):
    return len(re.findall(r"/\* kernel \d+: ", exe.source))


def test_rows_cover_the_program_and_add_up_to_at_most_the_total():
    f = tg.compile(lambda x, w, b: ((x @ w + b).tanh() * 2).sum(-1))
    args = (tg.randn(16, 32), tg.randn(32, 8), tg.randn(8))
    p = f.profile(*args)
    exe = f.programs[0].executable
    assert sorted(r.index for r in p.rows) == list(range(kernel_count(exe)))
    assert {r.program for r in p.rows} == {"program"}
    assert sum(r.time_us for r in p.rows) <= p.total_us
    assert p.programs[0].kernel_us <= p.programs[0].call_us
    assert all(r.time_us >= 0 and 0 <= r.share <= 1 for r in p.rows)
    assert [r.time_us for r in p.rows] == sorted((r.time_us for r in p.rows), reverse=True)
    assert p.peak == FAKE and all(r.fma_pct is not None for r in p.rows)
    nodes = {n.split()[0] for r in p.rows for n in r.nodes}
    graph_nodes = {n.out.ref() for n in f.programs[0].graph.nodes}
    assert nodes <= graph_nodes and "%" in str(p) and "hottest kernels" in str(p)


def test_the_flops_of_a_matrix_product_are_exact():
    f = tg.compile(lambda x, w: (x @ w).relu())
    p = profile_call(f, (tg.randn(24, 40), tg.randn(40, 12)), repeat=3, warmup=1)
    (prod,) = [r for r in p.rows if r.kind == "product"]
    assert prod.flops == 2 * 24 * 40 * 12 and prod.blas_calls == 1
    assert prod.nodes and prod.nodes[0].endswith(" matmul")
    assert prod.bytes == 4 * (24 * 40 + 40 * 12 + 24 * 12)
    assert prod.gflops == pytest.approx(prod.flops / (prod.time_us * 1e3))
    assert prod.fma_pct == pytest.approx(100 * prod.gflops / FAKE.fma_gflops)
    g = tg.compile(lambda a, b: a @ b)
    q = profile_call(g, (tg.randn(3, 8, 16), tg.randn(3, 16, 4)), repeat=3, warmup=1, peak=False)
    assert sum(r.flops for r in q.rows if r.kind == "product") == 2 * 3 * 8 * 16 * 4
    assert q.peak is None and all(r.fma_pct is None for r in q.rows)


def test_a_loop_kernel_counts_each_fused_op_per_element_and_its_traffic():
    f = tg.compile(lambda x: (x * 3 + 1).exp())
    p = profile_call(f, (tg.randn(1000),), repeat=3, warmup=0)
    (row,) = p.rows
    assert row.kind == "loop" and row.flops == 3 * 1000 and row.bytes == 2 * 4 * 1000
    assert [n.split()[1] for n in row.nodes] == ["mul", "add", "exp"]


def test_links_point_at_the_generated_c_of_each_kernel():
    f = tg.compile(lambda x, w: (x @ w).sigmoid().sum())
    p = f.profile(tg.randn(8, 8), tg.randn(8, 8))
    for r in p.rows:
        lines = open(r.source).read().split("\n")
        first = lines[r.line - 1]
        assert re.match(rf"\s*/\* kernel {r.index}: ", first) or "tg_shared" in first, first
        assert r.line <= r.end_line and r.link == f"{r.source}:{r.line}"
    assert open(p.rows[0].source).read().startswith(f.programs[0].executable.source)  # the program's own


def test_chrome_trace_is_json_with_one_event_per_kernel(tmp_path):
    f = tg.compile(lambda x: (x.relu() @ x.T).softmax(-1))
    p = f.profile(tg.randn(16, 16))
    path = tmp_path / "trace.json"
    p.save_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == len(p.rows)
    assert all(e["dur"] >= 0 and "nodes" in e["args"] and "source" in e["args"] for e in events)
    assert trace["otherData"]["peak"]["fma_gflops"] == FAKE.fma_gflops


def test_forward_and_backward_are_profiled_without_effects():
    w = tg.randn(32, 16, requires_grad=True)
    f = tg.compile(lambda x: (x @ w).tanh().sum())
    p = f.profile(tg.randn(8, 32))
    assert {r.program for r in p.rows} == {"forward", "backward"}
    prog = f.programs[0]
    for name, exe in (("forward", prog.executable), ("backward", prog.backward_executable)):
        assert sorted(r.index for r in p.rows if r.program == name) == list(range(kernel_count(exe)))
    assert w.grad is None
    assert sum(r.flops for r in p.rows if r.kind == "product") == 2 * 8 * 32 * 16 * 2  # y and dL/dw


def test_a_whole_training_step_is_one_program_and_its_updates_are_not_applied():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(12, 24), tg.nn.ReLU(), tg.nn.Linear(24, 3))
    opt = tg.optim.AdamW(model.parameters(), lr=1e-2)

    @tg.compile
    def step(x, y):
        opt.zero_grad()
        loss = tg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = tg.randn(10, 12), tg.randint(0, 3, (10,))
    before = [q.detach().numpy().copy() for q in model.parameters()]
    p = step.profile(x, y)
    assert {r.program for r in p.rows} == {"program"}
    assert sum(r.kind == "product" for r in p.rows) >= 5  # forward, input and weight gradients
    assert all(np.array_equal(a, q.detach().numpy()) for a, q in zip(before, model.parameters()))
    assert sorted(r.index for r in p.rows) == list(range(kernel_count(step.programs[0].executable)))


def test_a_compiled_module_profiles_its_forward():
    m = tg.compile(tg.nn.Linear(8, 4))
    p = m.profile(tg.randn(5, 8))
    assert any(r.kind == "product" for r in p.rows)


def test_a_dynamic_function_is_profiled_at_the_given_sizes():
    f = tg.compile(lambda x, w: (x @ w).relu().sum(), dynamic=True)
    w = tg.randn(16, 4)
    f(tg.randn(8, 16), w)
    f(tg.randn(12, 16), w)
    p = f.profile(tg.randn(10, 16), w)
    assert [r.flops for r in p.rows if r.kind == "product"] == [2 * 10 * 16 * 4]


def test_a_program_split_over_its_batch_is_timed_unsplit():
    w = tg.randn(32, 16, requires_grad=True)
    f = tg.compile(lambda x: (x @ w).tanh().sum(), options={"batch_split": True})
    p = f.profile(tg.randn(64, 32))
    assert f.programs[0].executable.options["batch_split"]
    fwd = next(t for t in p.programs if t.program == "forward")
    assert "timed unsplit" in fwd.note and "timed unsplit" in str(p)
    rows = [r for r in p.rows if r.program == "forward"]
    assert sorted(r.index for r in rows) == list(range(fwd.kernels))
    assert all(re.match(rf"\s*/\* kernel {r.index}: ", open(r.source).read().split("\n")[r.line - 1]) for r in rows)


def test_programs_other_than_c_are_refused_in_one_line():
    f = tg.compile(lambda x: x * 2, backend="interpreter")
    with pytest.raises(ProfileError, match=r"C programs \(backend='c'\); this is the interpreter's") as e:
        f.profile(tg.ones(3))
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="repeat >= 1"):
        profile_call(tg.compile(lambda x: x + 1), (tg.ones(2),), repeat=0)
    with pytest.raises(TypeError, match="tg.compile'd function"):
        profile_call(lambda x: x, (tg.ones(2),))


def test_the_peak_is_read_from_the_cache():
    assert machine_peak() == FAKE
    assert "FMA 200.0 GFLOP/s" in FAKE.describe()


@pytest.mark.slow
def test_measure_the_peak_for_real():
    peak = measure(cores=1)
    assert peak.fma_gflops > 0.5 and peak.bandwidth_gbs > 0.1 and peak.cores == 1
    assert peak.fma_gflops == peak.fma_gflops_one_core


SCRIPT = textwrap.dedent("""
    import tracegrad as tg

    def step(x, w):
        return (x @ w).relu().mean()
""")


def test_cli_profiles_a_file(tmp_path, capsys):
    path = tmp_path / "model.py"
    path.write_text(SCRIPT)
    trace = tmp_path / "t.json"
    code = main(["profile", f"{path}:step", "--arg", "x=f32[16,32]", "--arg", "w=f32[32,8]:grad",
                 "--repeat", "3", "--trace", str(trace)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "profile of step" in out and "matmul 16x32 @ 32x8" in out and "fwd k" in out
    assert json.loads(trace.read_text())["traceEvents"]


@pytest.mark.parametrize("argv, message", [
    (["profile", "no_such_file.py:f"], "profile: no_such_file.py: no such file"),
    (["profile", "model.py"], "expected path/to/file.py:function"),
    (["profile", "model.py:step", "--arg", "x=f32[16,32]"], "missing --arg for parameter(s) w"),
    (["profile", "model.py:step", "--repeat", "0"], "--repeat: expected at least 1, got 0"),
])
def test_cli_errors_are_one_line_with_exit_code_2(tmp_path, monkeypatch, capsys, argv, message):
    (tmp_path / "model.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tracegrad: error: profile") and message in err, err
