"""Whole programs written as PyTorch code (tests/programs/), each run twice from the same source:
once on ``torch``, once with only the import changed to tracegrad (``import tracegrad as torch``
and its submodules). Their ``RESULTS`` must agree. Any other edit the tracegrad run would need is
a bug to fix (issue 25)."""
from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad  # noqa: E402

PROGRAMS = sorted((pathlib.Path(__file__).parent / "programs").glob("*.py"))


def as_tracegrad(source):
    """The one change a user makes: torch's imports become tracegrad's."""
    source = re.sub(r"^import torch((?:\.\w+)+) as (\w+)$", r"import tracegrad\1 as \2", source, flags=re.M)
    source = re.sub(r"^from torch((?:\.\w+)*) import ", r"from tracegrad\1 import ", source, flags=re.M)
    return re.sub(r"^import torch$", "import tracegrad as torch", source, flags=re.M)


def run(source, name):
    namespace = {"__name__": name}
    exec(compile(source, name, "exec"), namespace)
    return namespace["RESULTS"]


def assert_same(got, want, where="RESULTS"):
    if isinstance(want, dict):
        assert set(got) == set(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5, err_msg=where)
    else:
        assert got == want, where


def compiled(path):
    return "torch.compile(" in path.read_text()


# The reference is always torch eager (torch.compile is the identity there: its result is
# eager's, and inductor would need minutes here). tracegrad runs each program eagerly and, where
# the program compiles its step, with tg.compile on each backend.
MODES = [pytest.param(p, "eager", id=f"{p.stem}-eager") for p in PROGRAMS] + [
    pytest.param(p, backend, id=f"{p.stem}-{backend}") for p in PROGRAMS if compiled(p)
    for backend in ("interpreter", "c")]


@pytest.mark.parametrize("path, mode", MODES)
def test_program_runs_the_same_on_torch_and_tracegrad(path, mode, monkeypatch, capsys):
    source = path.read_text()
    monkeypatch.setattr(torch, "compile", lambda fn=None, *a, **k: fn)
    want = run(source, f"{path.stem}[torch]")
    tg_compile = tracegrad.compile
    if mode == "eager":
        monkeypatch.setattr(tracegrad, "compile", lambda fn=None, *a, **k: fn)
    else:
        monkeypatch.setattr(tracegrad, "compile", lambda fn, **k: tg_compile(fn, **{**k, "backend": mode}))
    tracegrad.manual_seed(0)
    # (the random draws differ between the libraries: the programs' data are made by torch and
    # handed over, by seeding both and replacing their factories' draws with torch's)
    got = run_with_torch_data(as_tracegrad(source), path.stem)
    if mode != "eager" and isinstance(want.get("grad_fn"), str):
        want["grad_fn"] = "CompiledFunctionBackward"  # (what torch.compile's outputs carry too)
    assert_same(got, want)


def run_with_torch_data(source, name):
    """Run ``source`` on tracegrad with torch's random numbers: tracegrad's random factories
    (randn, rand, randint and module initialisation through nn.init) draw from torch's generator,
    seeded as the program seeds it, so both runs start from the same data and weights."""
    import tracegrad as tg
    import tracegrad.nn.init as init

    saved = {n: getattr(tg, n) for n in ("randn", "rand", "randint", "randn_like", "manual_seed")}
    saved_init = {n: getattr(init, n) for n in ("kaiming_uniform_", "uniform_", "normal_")}

    def from_torch(fn):
        def draw(*a, **k):  # (drawn by torch on the CPU, placed where the program asked)
            k = {kk: v for kk, v in k.items() if kk != "requires_grad"}
            device = k.pop("device", None)
            return tg.tensor(fn(*a, **k).numpy(), device=device)
        return draw

    def init_from_torch(fn):
        def draw(tensor, *a, **k):
            ref = torch.empty(tuple(tensor.shape))
            fn(ref, *a, **k)
            with tg.no_grad():
                tensor.copy_(tg.tensor(ref.numpy()))
            return tensor
        return draw

    try:
        tg.randn, tg.rand, tg.randint = from_torch(torch.randn), from_torch(torch.rand), from_torch(torch.randint)
        tg.randn_like = lambda t, **k: tg.tensor(torch.randn(tuple(t.shape)).numpy(), device=t.device)
        tg.manual_seed = torch.manual_seed
        init.kaiming_uniform_ = init_from_torch(torch.nn.init.kaiming_uniform_)
        init.uniform_ = init_from_torch(torch.nn.init.uniform_)
        init.normal_ = init_from_torch(torch.nn.init.normal_)
        return run(source, f"{name}[tracegrad]")
    finally:
        for n, f in saved.items():
            setattr(tg, n, f)
        for n, f in saved_init.items():
            setattr(init, n, f)
