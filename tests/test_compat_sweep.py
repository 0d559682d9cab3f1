"""A sample of the differential sweep (tests/compat_sweep.py; the whole of it writes its counts
into docs/compatibility.md): the machinery runs, finds what it should, and the names below,
which agree with PyTorch today, keep agreeing (eager and compiled)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import compat_sweep

# names that agree with PyTorch in every form the sweep tries (a regression shows up here)
SAMPLE = {
    "torch": ["exp", "log", "where", "tanh", "sqrt", "sigmoid", "cat", "stack", "permute"],
    "Tensor": ["sum", "amax", "sort", "transpose", "exp_", "unbind", "mean", "flatten", "max", "cumsum"],
    "nn.functional": ["relu", "gelu", "log_softmax", "glu", "normalize", "softmax", "mse_loss"],
    "linalg": ["inv", "det", "solve", "slogdet"],
    "special": ["erfinv", "i0", "ndtr", "expit"],
}


@pytest.fixture(scope="module")
def report():
    return compat_sweep.sweep(names=SAMPLE, only=list(SAMPLE))


def test_sample_agrees_with_pytorch(report):
    for label, names in SAMPLE.items():
        e = report[label]
        assert e["checked"] == len(names), (label, e["checked"])
        assert not e["missing"], (label, e["missing"])
        assert not e["calls"], (label, e["calls"])
        assert not e["signature"], (label, e["signature"])


def test_the_sweep_sees_a_missing_name_a_signature_and_a_call_difference():
    import torch

    import tracegrad as tg

    # a made-up namespace: one name missing, one with another keyword and default
    def ours(input, dims=2):
        return input

    overloads = compat_sweep.torch_overloads(torch, "torch", "topk", torch.topk)
    assert [n for n, _, _ in overloads[0]][:3] == ["input", "k", "dim"]
    notes = compat_sweep.signature_differences([[("input", False, compat_sweep._UNSET),
                                                 ("dim", False, 1)]], ours)
    assert notes == ["keyword dim", "argument 2 is dims, not dim"]
    # tracegrad's exp never raises on a dim: a call of torch.exp(x, 1) is a TypeError (skipped)
    assert compat_sweep.compare_calls(torch, tg, "torch", "exp", torch.exp, tg.exp, compiled=False) == []
    # a function that gives other values is reported, by form
    notes = compat_sweep.compare_calls(torch, tg, "torch", "neg", torch.neg, tg.exp, compiled=False)
    assert notes and notes[0].startswith("(x): other values")


def test_report_goes_between_the_markers(tmp_path):
    doc = tmp_path / "compatibility.md"
    doc.write_text("# x\n\nbefore\n\n" + compat_sweep.BEGIN + "\nold\n" + compat_sweep.END + "\n\nafter\n")
    text = compat_sweep.render({"torch": {"missing": ["fft"], "signature": {}, "calls": {}, "checked": 3,
                                          "present": 2, "called": 2}})
    compat_sweep.write_report(text, str(doc))
    out = doc.read_text()
    assert "old" not in out and "before" in out and "after" in out and "`fft`" in out
    assert out.count(compat_sweep.BEGIN) == 1
