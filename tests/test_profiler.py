"""The autograd profiler (tg.autograd.profiler) against torch.autograd.profiler: the reference
example's call counts, key_averages().table(sort_by=..., row_limit=...), record_function,
record_shapes, export_chrome_trace, and the profile object's API."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402
from tracegrad.autograd import profiler  # noqa: E402


def reference_example(lib, iterations=20):
    x = lib.randn((1, 1), requires_grad=True)
    with lib.autograd.profiler.profile() as prof:
        for _ in range(iterations):  # any normal python code, really!
            y = x ** 2
            y.backward()
    return prof


def counts(prof):
    return {e.key: e.count for e in prof.key_averages()}


def test_reference_example_counts_match_torch():
    ours, ref = counts(reference_example(tg)), counts(reference_example(torch))
    assert ours["pow"] == ref["aten::pow"] == 40  # forward, and again inside PowBackward0
    assert ours["PowBackward0"] == ref["PowBackward0"] == 20
    assert ours["AccumulateGrad"] == ref["torch::autograd::AccumulateGrad"] == 20


def test_reference_example_table():
    prof = reference_example(tg)
    table = prof.key_averages().table(sort_by="self_cpu_time_total")
    lines = table.splitlines()
    header = lines[1].split()
    assert header[:3] == ["Name", "Self", "CPU"] and header[-3:] == ["#", "of", "Calls"]
    assert lines[0].startswith("---") and lines[2].startswith("---")
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:-2]
    assert {r.split()[0] for r in rows} >= {"pow", "PowBackward0", "AccumulateGrad"}
    self_times = [e.self_cpu_time_total for e in prof.key_averages()]
    ordered = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    assert [r.split()[0] for r in rows] == [e.key for e in ordered]
    assert sum(self_times) == pytest.approx(prof.self_cpu_time_total)


@pytest.mark.parametrize("sort_by", ["self_cpu_time_total", "cpu_time_total", "count", "cpu_time"])
def test_table_sorting_and_row_limit(sort_by):
    prof = reference_example(tg, iterations=5)
    averages = prof.key_averages()
    table = averages.table(sort_by=sort_by, row_limit=2)
    rows = table.splitlines()[3:-2]
    assert len(rows) == 2
    best = sorted(averages, key=lambda e: getattr(e, sort_by), reverse=True)[:2]
    assert [r.split()[0] for r in rows] == [e.key for e in best]
    # torch accepts the same keys
    reference_example(torch, 2).key_averages().table(sort_by=sort_by, row_limit=2)


def test_unknown_sort_key_is_an_attribute_error_like_torch():
    for lib in (tg, torch):
        prof = reference_example(lib, iterations=1)
        with pytest.raises(AttributeError, match="object has no attribute 'bogus'"):
            prof.key_averages().table(sort_by="bogus")


def test_table_header_argument():
    table = reference_example(tg, 1).key_averages().table(header="MY HEADER")
    assert table.splitlines()[1] == "MY HEADER"


def test_record_function_nests_and_times():
    with tg.autograd.profiler.profile() as prof:
        with tg.autograd.profiler.record_function("outer_block"):
            a = tg.ones(100, 100)
            with tg.autograd.profiler.record_function("inner_block"):
                (a @ a).sum()
    events = {e.name: e for e in prof.function_events}
    outer, inner = events["outer_block"], events["inner_block"]
    assert inner.cpu_parent is outer and events["matmul"].cpu_parent is inner
    assert outer.cpu_time_total >= inner.cpu_time_total >= events["matmul"].cpu_time_total
    assert outer.self_cpu_time_total <= outer.cpu_time_total
    keys = [e.key for e in prof.key_averages()]
    assert keys[:2] == ["outer_block", "inner_block"]


def test_record_function_as_decorator_and_outside_profiling():
    @tg.autograd.profiler.record_function("decorated")
    def f(x):
        return x * 2

    f(tg.ones(2))  # no profile active: no effect
    with tg.autograd.profiler.profile() as prof:
        f(tg.ones(2))
    assert counts(prof)["decorated"] == 1


def test_record_shapes_and_grouping_by_input_shape():
    with tg.autograd.profiler.profile(record_shapes=True) as prof:
        tg.mm(tg.ones(2, 3), tg.ones(3, 4))
        tg.mm(tg.ones(2, 3), tg.ones(3, 4))
        tg.mm(tg.ones(5, 3), tg.ones(3, 4))
    grouped = prof.key_averages(group_by_input_shape=True)
    mm = sorted((e.input_shapes, e.count) for e in grouped if e.key == "matmul")
    assert mm == [([[2, 3], [3, 4]], 2), ([[5, 3], [3, 4]], 1)]
    table = grouped.table(sort_by="count")
    assert "Input Shapes" in table.splitlines()[1] and "[[2, 3], [3, 4]]" in table


def test_export_chrome_trace(tmp_path):
    prof = reference_example(tg, iterations=3)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    assert len(events) == len(prof.function_events)
    for ev in events:
        assert ev["ph"] == "X" and ev["dur"] >= 0 and isinstance(ev["ts"], float)
        assert {"name", "pid", "tid", "cat"} <= set(ev)
    assert {"pow", "PowBackward0"} <= {ev["name"] for ev in events}


def test_profile_object_api():
    with tg.autograd.profiler.profile() as prof:
        assert len(prof.key_averages()) == 0  # nothing before the block ends (as torch)
        tg.ones(3) + 1
    total = prof.total_average()
    assert total.key == "Total" and total.count == len(prof.function_events)
    assert prof.self_cpu_time_total == pytest.approx(prof.function_events.self_cpu_time_total)
    assert "add" in str(prof)
    assert "add" in repr(prof.function_events[-1])


def test_disabled_profile_records_nothing_and_costs_nothing():
    with tg.autograd.profiler.profile(enabled=False) as prof:
        tg.ones(3) + 1
    assert len(prof.key_averages()) == 0
    from tracegrad.ops import registry

    assert registry._profiler is None and not profiler._active


def test_profiling_does_not_change_results_and_cleans_up_on_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError):
        with tg.autograd.profiler.profile() as prof:
            y = (x.exp() * x).sum()
            y.backward()
            raise ValueError("stop")
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])),
                               rtol=1e-6)
    from tracegrad.ops import registry

    assert registry._profiler is None
    assert counts(prof)["ExpBackward0"] == 1


def test_nested_profiles_both_record():
    with tg.autograd.profiler.profile() as outer:
        tg.ones(2) + 1
        with tg.autograd.profiler.profile() as inner:
            tg.ones(2) * 2
    assert counts(outer)["mul"] == 1 and counts(outer)["add"] == 1
    assert "add" not in counts(inner) and counts(inner)["mul"] == 1
