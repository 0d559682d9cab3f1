"""Security and faults (docs/security.md): hostile names never become C, the compile cache
refuses tampered entries and untrusted directories, survives read-only and full directories,
thread and process races and killed compiles, ``cache clear`` removes only its own files, a
compiler that builds nothing falls back with a warning, and the dynamic export refuses a batch
whose byte counts would overflow.

What can run arbitrary code if it goes wrong (a planted constructor, a tampered library) runs in
a subprocess with a timeout and its own TRACEGRAD_CACHE_DIR."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tracegrad as tg
import tracegrad.compiler.cache as cache
from tracegrad.compiler.backends.c.text import check_export_name, comment_text

ROOT = Path(__file__).resolve().parents[1]
CC = os.environ.get("CC", "cc")
needs_cc = pytest.mark.skipif(shutil.which(CC) is None, reason="needs a C compiler")
needs_make = pytest.mark.skipif(shutil.which(CC) is None or shutil.which("make") is None,
                                reason="needs a C compiler and make")

# a name that would run a shell command at library load if pasted into C, and break the build
# (a line of its own) if pasted with its newline
HOSTILE = ('evil */ __attribute__((constructor)) static void tg_pwn(void) { system("touch PWNED"); } /*'
           '\n#error injected "%s ??/')
PARAM = 'w */ int tg_evil_param; /*\n#error p'
BUFFER = 'b */ int tg_evil_buf; /*\n#error b'
KWARG = 'k */ int tg_evil_arg; /*\n#error k'
FRAGMENTS = ("*/ __attr", "*/ int tg_evil", "#error", '"%s ??/', 'system("')


def _py(script, cache_dir, timeout=120, extra_env=None, cwd=None, check=True):
    """Run ``script`` in a fresh interpreter on ``cache_dir``; returns the last stdout line as JSON."""
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=str(cwd or ROOT))
    if not check:
        return r
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


HOSTILE_MODEL = f"""
import json, os, warnings
import numpy as np, tracegrad as tg
H, P, BN, K = {HOSTILE!r}, {PARAM!r}, {BUFFER!r}, {KWARG!r}

def init(self):
    tg.nn.Module.__init__(self)
    self.register_parameter(P, tg.nn.Parameter(tg.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))))
    self.register_buffer(BN, tg.full((2,), 0.5))

def forward(self, x):
    return (x @ getattr(self, P)).tanh() + getattr(self, BN)

Evil = type(H, (tg.nn.Module,), {{"__init__": init, "forward": forward}})  # a class named H
m = Evil()

def f(x, **kw):
    return (m(x) * kw[K]).sum()

f.__name__ = f.__qualname__ = H
x = tg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
y = tg.full((4, 2), 2.0)
"""


@needs_cc
def test_hostile_names_never_reach_compiled_c(tmp_path):
    """Function, class (a module's forward), parameter, buffer and keyword-argument names that
    hold ``*/``, C text and a newline: the generated C shows them defanged, builds, loads
    without running anything, and computes eager's values (forward and backward)."""
    script = HOSTILE_MODEL + """
cf = tg.compile(f, backend="c", fullgraph=True)
cm = tg.compile(m, backend="c", fullgraph=True)
xg = x.detach().requires_grad_()
got, want = cf(x, **{K: y}), f(x, **{K: y})
out = cm(xg); out.sum().backward()
ref = tg.tensor(x.numpy()).requires_grad_(); m(ref).sum().backward()
sources = [e.source for c in (cf, cm) for p in c.programs
           for e in (p.executable, getattr(p, "backward_executable", None)) if hasattr(e, "source")]
print(json.dumps({"sources": sources, "got": float(got), "want": float(want),
                  "grad_ok": bool(np.allclose(xg.grad.numpy(), ref.grad.numpy(), atol=1e-6)),
                  "out_ok": bool(np.allclose(out.detach().numpy(), m(x).detach().numpy(), atol=1e-6)),
                  "kinds": [type(p.executable).__name__ for c in (cf, cm) for p in c.programs],
                  "pwned": os.path.exists("PWNED")}))
"""
    r = _py(script, tmp_path / "cache", cwd=tmp_path)
    assert not r["pwned"] and not (tmp_path / "PWNED").exists()
    assert set(r["kinds"]) == {"CExecutable"}, r["kinds"]
    assert len(r["sources"]) >= 3  # f's forward, the module's forward and backward
    assert any("for graph evil __" in s for s in r["sources"])  # the class name, shown defanged
    for src in r["sources"]:
        for frag in FRAGMENTS:
            assert frag not in src, frag
    assert r["got"] == pytest.approx(r["want"], rel=1e-6)
    assert r["grad_ok"] and r["out_ok"]


@needs_make
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_hostile_tensor_names_in_an_export(tmp_path, dynamic):
    """Export: tensor names (a keyword argument, a parameter, a buffer) and the graph name are
    shown defanged in every file; the library, and its example program, build and run."""
    script = HOSTILE_MODEL + f"""
ep = tg.export(f, x, name="evil_lib", dynamic={dynamic}, **{{K: y}})
ep.save("lib")
print(json.dumps({{"names": [t.name for t in ep.inputs]}}))
"""
    r = _py(script, tmp_path / "cache", cwd=tmp_path, timeout=180)
    assert KWARG in r["names"]  # Python keeps the real names (signature)
    lib = tmp_path / "lib"
    for p in lib.iterdir():
        text = p.read_text()
        for frag in FRAGMENTS:
            assert frag not in text, (p.name, frag)
    subprocess.run(["make", "-s", "-C", str(lib)], check=True, capture_output=True, text=True, timeout=180)
    exe = lib / "example"
    subprocess.run([CC, str(lib / "example.c"), "-I", str(lib), str(lib / "libevil_lib.a"), "-lm",
                    "-o", str(exe)], check=True, capture_output=True, text=True, timeout=120)
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30, cwd=str(tmp_path))
    assert run.returncode == 0 and "result[0] = " in run.stdout, run.stdout + run.stderr
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("name", ["int", "free", "exp", "sqrtf", "main", "inputs", "in0", "B", "size_t",
                                  "class", "_hidden", "tg_x", "TG_x", "a b", "x\ny", "1x", "lib*/",
                                  "stdio", "naïve"])
def test_export_names_must_be_plain_c_identifiers(name):
    with pytest.raises(ValueError, match="expected") as err:
        tg.export(lambda x: x * 2, tg.ones(2), name=name)
    assert repr(name) in str(err.value)


def test_export_name_from_a_hostile_function_name_is_refused():
    def f(x):
        return x * 2

    f.__name__ = HOSTILE
    with pytest.raises(ValueError, match="not a usable C identifier"):
        tg.export(f, tg.ones(2))
    check_export_name("my_model")  # an ordinary name passes
    assert tg.export(f, tg.ones(2), name="doubler").name == "doubler"


def test_comment_text_cannot_end_a_comment_or_string():
    for s in (HOSTILE, PARAM, "a*/b", "a\rb", "x\\", '"', "%n", "??/", "é", "\x00"):
        shown = comment_text(s)
        assert not any(c in shown for c in '*/\\"%?\n\r\x00'), shown
    assert comment_text("model.0.weight") == "model.0.weight"
    assert comment_text("opt.param_groups[0]['lr']") == "opt.param_groups[0]['lr']"
    assert len(comment_text("x" * 1000)) <= 130


# ----------------------------------------------------------------------------- the cache
STEP = """
import json, os, sys, warnings
import numpy as np, tracegrad as tg
warnings.simplefilter("always")
caught = []
warnings.showwarning = lambda m, *a, **k: caught.append(str(m))

def make():
    @tg.compile(backend="c")
    def f(x, w):
        return (x @ w).tanh().sum(dim=1) * 3.0 + 1.0
    return f

x = tg.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
w = tg.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2))

def call(fn=None):
    fn = fn or make()
    y = fn(x, w)
    exe = fn.programs[-1].executable
    return {"value": y.numpy().tolist(), "hit": getattr(exe, "cache_hit", None),
            "path": getattr(exe, "path", ""), "kind": type(exe).__name__}
"""


@needs_cc
def test_editing_an_entrys_metadata_rebuilds_it(tmp_path):
    """The JSON that sizes the buffers is under the checksum: an edit (a smaller workspace, a
    larger output) is a damaged entry, rebuilt, never loaded."""
    first = _py(STEP + "print(json.dumps(call()))", tmp_path)
    meta_path = Path(first["path"]).with_suffix(".json")
    for edit in ("workspace", "outputs"):
        meta = json.loads(meta_path.read_text())
        if edit == "workspace":
            meta["workspace"] = 0
        else:
            meta["outputs"][0][0] = [1 << 20]
        meta_path.write_text(json.dumps(meta))
        again = _py(STEP + "print(json.dumps(call()))", tmp_path)
        assert again["hit"] is False and again["value"] == first["value"]
        assert json.loads(meta_path.read_text())["workspace"] == json.loads(
            Path(first["path"]).with_suffix(".json").read_text())["workspace"]
    assert _py(STEP + "print(json.dumps(call()))", tmp_path)["hit"] is True


@needs_cc
def test_editing_the_library_rebuilds_it(tmp_path):
    first = _py(STEP + "print(json.dumps(call()))", tmp_path)
    so = Path(first["path"])
    data = bytearray(so.read_bytes())
    data[len(data) // 3] ^= 0x5A
    so.write_bytes(bytes(data))
    again = _py(STEP + "print(json.dumps(call()))", tmp_path)
    assert again["hit"] is False and again["value"] == first["value"]


@needs_cc
@pytest.mark.parametrize("swap", ["world_writable", "symlink", "entry_symlink"])
def test_trust_is_checked_at_every_load(tmp_path, swap):
    """After a first load from a good directory, the directory (or an entry) is swapped for an
    untrusted one in the same process: the next load refuses it, warns, and builds privately."""
    cdir = tmp_path / "cache"
    script = STEP + f"""
import shutil, pathlib
cdir = pathlib.Path({str(cdir)!r})
first = call()
swap = {swap!r}
if swap == "world_writable":
    os.chmod(cdir, 0o777)
elif swap == "symlink":  # the directory becomes a link to a copy (as a planted one would be)
    shutil.copytree(cdir, str(cdir) + "-elsewhere")
    shutil.rmtree(cdir)
    os.symlink(str(cdir) + "-elsewhere", cdir)
else:  # the entry's library becomes a link to a copy
    so = pathlib.Path(first["path"])
    shutil.copy(so, str(so) + ".copy")
    so.unlink()
    os.symlink(str(so) + ".copy", so)
second = call()
print(json.dumps({{"first": first, "second": second, "warnings": caught}}))
"""
    r = _py(script, cdir)
    assert r["first"]["hit"] is False and r["first"]["path"].startswith(str(cdir))
    assert r["second"]["value"] == r["first"]["value"]
    if swap == "entry_symlink":  # the directory is fine: the linked entry is rebuilt in place
        assert r["second"]["hit"] is False
        assert not Path(r["second"]["path"]).is_symlink()
    else:
        assert not r["second"]["path"].startswith(str(cdir))
        assert any("not using the compile cache directory" in w for w in r["warnings"]), r["warnings"]


READ_ONLY = """
import errno, filelock, pathlib, tracegrad.compiler.cache as cache
ro = pathlib.Path(os.environ["TRACEGRAD_CACHE_DIR"])
MODE = sys.argv[1] if len(sys.argv) > 1 else "MODE_HERE"
if MODE == "read_only":
    # root writes through a 0500 directory: refuse the first write (the build lock) as the
    # kernel does for other users
    real_acquire = filelock.FileLock.acquire
    def acquire(self, *a, **k):
        if os.geteuid() == 0 and str(self.lock_file).startswith(str(ro)):
            raise PermissionError(errno.EACCES, "Permission denied", self.lock_file)
        return real_acquire(self, *a, **k)
    filelock.FileLock.acquire = acquire
else:  # a full disk: publishing the entry fails
    real_publish = cache._publish
    def publish(src, dst):
        if str(dst).startswith(str(ro)):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real_publish(src, dst)
    cache._publish = publish

@tg.compile(backend="c")
def g(x):
    return (x * 2).exp().sum()

results = [call(), call()]  # two first calls (two programs): one warning
y = g(x)
print(json.dumps({"results": results, "g": float(y), "g_want": float(np.exp(2 * x.numpy()).sum()),
                  "warnings": caught,
                  "g_path": g.programs[0].executable.path}))
"""


@needs_cc
@pytest.mark.parametrize("mode", ["read_only", "full"])
def test_unwritable_cache_directory_warns_once_and_still_compiles(tmp_path, mode):
    cdir = tmp_path / "cache"
    cdir.mkdir(mode=0o700)
    if mode == "read_only":
        os.chmod(cdir, 0o500)
    try:
        r = _py(STEP + READ_ONLY.replace("MODE_HERE", mode), cdir)
    finally:
        os.chmod(cdir, 0o700)
    assert all(x["kind"] == "CExecutable" for x in r["results"])
    assert r["results"][0]["value"] == r["results"][1]["value"]
    assert r["results"][1]["hit"] is True  # the second program found the first's private entry
    assert not r["results"][0]["path"].startswith(str(cdir)) and not r["g_path"].startswith(str(cdir))
    assert r["g"] == pytest.approx(r["g_want"], rel=1e-5)
    warned = [w for w in r["warnings"] if "cannot be written" in w]
    assert len(warned) == 1, r["warnings"]
    assert str(cdir) in warned[0]
    assert not list(cdir.glob("*.so"))


@needs_cc
def test_a_read_only_directory_still_serves_its_entries(tmp_path):
    cdir = tmp_path / "cache"
    first = _py(STEP + "print(json.dumps(call()))", cdir)
    os.chmod(cdir, 0o500)
    try:
        again = _py(STEP + "print(json.dumps({'r': call(), 'warnings': caught}))", cdir)
    finally:
        os.chmod(cdir, 0o700)
    assert again["r"]["hit"] is True and again["r"]["path"] == first["path"]
    assert not again["warnings"]


RACE = STEP + """
import threading
f = make()
barrier = threading.Barrier(8)
errors, values = [], []

def first_call():
    try:
        barrier.wait()
        values.append(f(x, w).numpy().tolist())
    except Exception as e:  # noqa: BLE001 (the test reports any)
        errors.append(repr(e))

threads = [threading.Thread(target=first_call) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(json.dumps({"errors": errors, "values": values,
                  "built": sum(p.executable.cache_hit is False for p in f.programs),
                  "programs": len(f.programs),
                  "kinds": sorted({type(p.executable).__name__ for p in f.programs})}))
"""


@needs_cc
def test_threads_racing_on_first_calls_never_fail_and_build_once(tmp_path):
    cdir = tmp_path / "cache"
    r = _py(RACE, cdir)
    assert r["errors"] == [] and len(r["values"]) == 8
    assert len({json.dumps(v) for v in r["values"]}) == 1
    assert r["kinds"] == ["CExecutable"]
    assert r["built"] == 1
    assert r["programs"] == 1  # one thread traced; the others waited and reused its program
    assert len(list(cdir.glob("*.so"))) == 1
    assert not list(cdir.glob(".build-*")) and not list(cdir.glob("*.tmp*"))


@needs_cc
def test_processes_with_threads_racing_build_once(tmp_path):
    cdir = tmp_path / "cache"
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(cdir), PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", RACE], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=str(ROOT)) for _ in range(3)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    assert all(o["errors"] == [] and o["kinds"] == ["CExecutable"] for o in outs)
    assert sum(o["built"] for o in outs) == 1
    assert len({json.dumps(o["values"][0]) for o in outs}) == 1
    assert len(list(cdir.glob("*.so"))) == 1


@needs_cc
def test_a_killed_compile_leaves_nothing_behind_for_long(tmp_path):
    """A compile killed mid-build (SIGKILL) leaves its .build-* directory; the next process that
    builds removes it (its owner is dead), and so does ``cache clear``."""
    cdir = tmp_path / "cache"
    slow_cc = tmp_path / "slowcc"
    # stalls on the generated program only (not on the compiler probes)
    slow_cc.write_text(f'#!/bin/sh\ncase "$*" in *program.c*) sleep 60;; esac\nexec {shutil.which(CC)} "$@"\n')
    slow_cc.chmod(0o755)
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(cdir), PYTHONPATH=str(ROOT), CC=str(slow_cc))
    p = subprocess.Popen([sys.executable, "-c", STEP + "call()"], env=env, cwd=str(ROOT),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not list(cdir.glob(".build-*")):
            time.sleep(0.1)
        assert list(cdir.glob(".build-*")), "the compile never started"
    finally:
        os.killpg(p.pid, signal.SIGKILL)  # (its own session: the interpreter and the stalled cc)
        p.wait(timeout=30)
    leftover = list(cdir.glob(".build-*"))
    assert leftover
    r = _py(STEP + "print(json.dumps(call()))", cdir)
    assert r["kind"] == "CExecutable"
    assert not any(p.exists() for p in leftover)
    # and cache clear removes one a dead process left (a pid that has exited)
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = cache._temp_prefix("x").split("-")[2]
    stale = cdir / f".build-0123456789ab-{host}-{dead.pid}-abcd1234"
    stale.mkdir()
    (stale / "program.c").write_text("int x;")
    live = cdir / f".build-0123456789ab-{host}-{os.getpid()}-abcd1234"  # ours: alive
    live.mkdir()
    subprocess.run([sys.executable, "-m", "tracegrad", "cache", "clear"], check=True, timeout=60,
                   env=dict(os.environ, TRACEGRAD_CACHE_DIR=str(cdir), PYTHONPATH=str(ROOT)),
                   capture_output=True, cwd=str(ROOT))
    assert not stale.exists() and live.exists()


@needs_cc
def test_cache_clear_leaves_user_files_alone(tmp_path):
    cdir = tmp_path / "cache"
    _py(STEP + "print(json.dumps(call()))", cdir)
    user = {"notes.json": '{"key": "mine"}', "model.c": "int main(void) { return 0; }",
            "libmine.so": "not ours", "build.lock": "", "data.txt": "x",
            "0" * 64 + ".json": '{"key": "not a tracegrad entry"}'}
    for name, text in user.items():
        (cdir / name).write_text(text)
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=str(cdir), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "tracegrad", "cache", "clear"], env=env, cwd=str(ROOT),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "removed 1 entries" in out.stdout, out.stdout + out.stderr
    left = sorted(p.name for p in cdir.iterdir())
    assert left == sorted(user), left


@needs_cc
def test_a_compiler_that_builds_nothing_falls_back_with_a_warning(tmp_path):
    """CC=/bin/true passes for a compiler (exits 0) but writes nothing: a clear warning and the
    interpreter, not a FileNotFoundError."""
    true = shutil.which("true")
    r = _py(STEP + "print(json.dumps({'r': call(), 'warnings': caught}))", tmp_path / "cache",
            extra_env={"CC": true})
    assert r["r"]["kind"] != "CExecutable"
    assert any("interpreter" in w and true in w for w in r["warnings"]), r["warnings"]
    ref = _py(STEP + "print(json.dumps(call()))", tmp_path / "cache2")
    assert r["r"]["value"] == pytest.approx(ref["value"], rel=1e-5)


def test_the_toolchain_memo_is_checked(tmp_path, monkeypatch):
    """A memo whose flags were edited (a flag the compiler would run with) is not used."""
    from tracegrad.compiler.backends.c import toolchain

    if shutil.which(toolchain.compiler()) is None:
        pytest.skip("needs a C compiler")
    monkeypatch.setenv(cache.ENV, str(tmp_path))
    toolchain.toolchain.cache_clear()
    try:
        version, flags = toolchain.toolchain(openmp=False, native=False)
        memo, = tmp_path.glob("toolchain-*.json")
        data = json.loads(memo.read_text())
        data["flags"].append("-fplugin=/tmp/evil.so")
        data["checksum"] = cache._checksum(data)  # even with a matching checksum
        memo.write_text(json.dumps(data))
        toolchain.toolchain.cache_clear()
        assert toolchain.toolchain(openmp=False, native=False)[1] == flags
        assert "-fplugin" not in memo.read_text()
    finally:
        toolchain.toolchain.cache_clear()


# ----------------------------------------------------------------------------- dynamic export
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "big.h"
static float data[3][256];
int main(int argc, char **argv) {
  (void)argc;
  int64_t B = strtoll(argv[1], NULL, 10);
  int64_t xs[2] = {B, 3}, wsh[2] = {3, 8}, ys[1] = {B};
  tg_tensor in[] = {{data[0], TG_FLOAT32, 2, xs}, {data[1], TG_FLOAT32, 2, wsh}};
  tg_tensor out[] = {{data[2], TG_FLOAT32, 1, ys}};
  int rc = big(in, BIG_N_INPUTS, out, BIG_N_OUTPUTS);
  printf("rc=%d msg=%s\n", rc, big_last_error());
  return 0;
}
"""


@needs_make
def test_dynamic_export_refuses_a_batch_whose_sizes_overflow(tmp_path):
    """At batch sizes whose workspace (32 bytes a row here: x is 12, the result 4) or shapes do
    not fit in 64 bits, or pass 2^62 bytes, the library returns 1 with a message, before
    allocating or touching anything; built with UBSan, so a signed overflow on the way aborts
    the test. Below that, a batch too large for memory is an allocation failure (3)."""
    W = tg.ones(3, 8)
    ep = tg.export(lambda x: (x @ W).relu().sum(dim=1), tg.ones(8, 3), name="big", dynamic=True)
    assert ep.workspace[0] == 32
    d = tmp_path / "big"
    ep.save(str(d))
    ubsan = ["-fsanitize=undefined", "-fno-sanitize-recover=all"]
    subprocess.run(["make", "-s", "-C", str(d), f"CFLAGS=-O1 {' '.join(ubsan)}"], check=True,
                   capture_output=True, text=True, timeout=180)
    (d / "driver.c").write_text(DRIVER)
    exe = d / "driver"
    subprocess.run([CC, "-O1", "-Wall", *ubsan, str(d / "driver.c"), "-I", str(d), str(d / "libbig.a"),
                    "-lm", "-o", str(exe)], check=True, capture_output=True, text=True, timeout=120)
    ok = subprocess.run([str(exe), "3"], capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0 and ok.stdout.startswith("rc=0 "), ok.stdout + ok.stderr
    oom = subprocess.run([str(exe), str(2 ** 55)], capture_output=True, text=True, timeout=30)
    assert oom.stdout.startswith("rc=3 ") and "out of memory" in oom.stdout, oom.stdout + oom.stderr
    # 2^57, 2^58: the workspace (2^62, 2^63 bytes); 2^60: x's bytes; then B rounded up to 64
    for batch in (2 ** 57, 2 ** 58, 2 ** 60, 2 ** 63 - 64, 2 ** 63 - 1):
        r = subprocess.run([str(exe), str(batch)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, (batch, r.stdout + r.stderr)
        assert "rc=1 " in r.stdout and "too large" in r.stdout, (batch, r.stdout)
        assert f"B={batch}" in r.stdout or f"is {batch}" in r.stdout, r.stdout
