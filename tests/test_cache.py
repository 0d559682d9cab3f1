"""The on-disk compile cache, through real processes: cold vs warm first call, corrupted
entries, four processes building one key at once, an unsafe (world-writable) directory, and
``python -m tracegrad cache info|clear``."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tracegrad.compiler.cache as cache

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np, tracegrad as tg
t1 = time.perf_counter()

@tg.compile(backend="c")
def f(x, w, b):
    return ((x @ w + b).tanh() * 0.5 + SEED).sum(dim=1)

rng = np.random.default_rng(0)
x = tg.tensor(rng.standard_normal((8, 16)).astype(np.float32))
w = tg.tensor(rng.standard_normal((16, 4)).astype(np.float32))
b = tg.tensor(rng.standard_normal(4).astype(np.float32))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    t2 = time.perf_counter()
    y = f(x, w, b)
    t3 = time.perf_counter()
exe = f.programs[0].executable
print(json.dumps({"hit": getattr(exe, "cache_hit", None), "first_call": t3 - t2, "import": t1 - t0,
                  "kind": type(exe).__name__, "value": y.numpy().tolist(), "path": getattr(exe, "path", ""),
                  "warnings": [str(w.message) for w in caught]}))
"""


def _run(cache_dir, seed=0.0, extra_env=None):
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env.update(extra_env or {})
    out = subprocess.run([sys.executable, "-c", SCRIPT.replace("SEED", repr(seed))], env=env,
                         capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cold_then_warm_cache(tmp_path):
    cold = _run(tmp_path)
    warm = _run(tmp_path)
    assert cold["kind"] == warm["kind"] == "CExecutable"
    assert cold["hit"] is False and warm["hit"] is True
    assert warm["value"] == cold["value"]
    # the warm first call skips code generation and the C compiler
    assert warm["first_call"] < 0.5 * cold["first_call"], (cold["first_call"], warm["first_call"])
    entries = list(tmp_path.glob("*.so"))
    assert len(entries) == 1
    assert stat.S_IMODE(os.stat(tmp_path).st_mode) & 0o077 == 0


STEP_SCRIPT = r"""
import json, tracegrad as tg
tg.manual_seed(0)
model = tg.nn.Linear(4, 2)
opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
hidden = {"deep": [[tg.ones(2)]]}  # lifted, but too deep for a name: numbered

@tg.compile(backend="c")
def step(x):
    opt.zero_grad()
    (model(x) * hidden["deep"][0][0]).sum().backward()
    opt.step()

step(tg.ones(3, 4))
prog = step.programs[0]
print(json.dumps({"hit": prog.executable.cache_hit, "listing": str(prog.graph).splitlines()[0]}))
"""


def test_training_step_hits_the_cache_in_a_new_process(tmp_path):
    """Lifted tensors (the optimizer's state and learning rate, an unnamed tensor) are named
    the same way in every process, so the program's key is too: the second process hits."""
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    runs = [json.loads(subprocess.run([sys.executable, "-c", STEP_SCRIPT], env=env, capture_output=True,
                                      text=True, timeout=300, cwd=str(ROOT), check=True).stdout)
            for _ in range(2)]
    assert [r["hit"] for r in runs] == [False, True]
    assert runs[0]["listing"] == runs[1]["listing"]
    assert "opt.param_groups[0]['lr']" in runs[0]["listing"] and "<tensor 0>" in runs[0]["listing"]
    assert "0x" not in runs[0]["listing"]


@pytest.mark.parametrize("damage", ["truncate", "garbage_json", "flip_byte"])
def test_corrupted_entry_is_rebuilt(tmp_path, damage):
    first = _run(tmp_path)
    so = Path(first["path"])
    meta = so.with_suffix(".json")
    if damage == "truncate":
        so.write_bytes(so.read_bytes()[:100])
    elif damage == "garbage_json":
        meta.write_text("{not json")
    else:
        data = bytearray(so.read_bytes())
        data[len(data) // 2] ^= 0xFF
        so.write_bytes(bytes(data))
    again = _run(tmp_path)
    assert again["hit"] is False and again["value"] == first["value"]
    assert _run(tmp_path)["hit"] is True


def test_four_processes_build_one_key_once(tmp_path):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _run(tmp_path, seed=0.25), range(4)))
    assert all(r["kind"] == "CExecutable" for r in results)
    assert sum(r["hit"] is False for r in results) == 1, [r["hit"] for r in results]
    assert len({json.dumps(r["value"]) for r in results}) == 1
    assert len(list(tmp_path.glob("*.so"))) == 1
    assert not list(tmp_path.glob(".build-*"))


def test_world_writable_directory_is_not_used(tmp_path):
    unsafe = tmp_path / "shared"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    r = _run(unsafe)
    assert r["kind"] == "CExecutable"
    assert any("not using the compile cache directory" in w for w in r["warnings"]), r["warnings"]
    assert not list(unsafe.iterdir()), "code was written into a world-writable directory"
    assert not r["path"].startswith(str(unsafe))


def test_cli_info_and_clear(tmp_path):
    _run(tmp_path)
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    info = subprocess.run([sys.executable, "-m", "tracegrad", "cache", "info"], env=env,
                          capture_output=True, text=True, cwd=str(ROOT))
    assert info.returncode == 0 and "entries:   1" in info.stdout and str(tmp_path) in info.stdout
    clear = subprocess.run([sys.executable, "-m", "tracegrad", "cache", "clear"], env=env,
                           capture_output=True, text=True, cwd=str(ROOT))
    assert clear.returncode == 0 and "removed 1 entries" in clear.stdout
    assert not list(tmp_path.glob("*.so"))


def test_key_changes_with_every_input():
    base = {"ir": "g", "flags": ["-O3"], "cpu": "x", "package": "0.1"}
    keys = {cache.make_key(base)}
    for k in base:
        keys.add(cache.make_key(dict(base, **{k: "other"})))
    assert len(keys) == len(base) + 1
