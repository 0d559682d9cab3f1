"""tg.export: a standalone C library built with plain `make`, driven by a C program written here.

Three functions (a forward pass, loss-and-gradients via tg.autograd.grad, an SGD training step of
a small MLP) are exported, built with `make` (BLAS=0; BLAS=1 when a system cblas exists), linked
into a C driver and compared with eager tracegrad. The driver also checks the validation errors,
in-place parameter updates (outputs aliasing inputs), two threads calling at once, and runs under
AddressSanitizer.
"""
import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
from tracegrad.compiler import CompileError

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None or shutil.which("make") is None,
                                reason="needs a C compiler and make")
CC = os.environ.get("CC", "cc")


def driver_source(ep):
    """A C driver for ``ep``: modes run / steps K / bad / threads over in<i>.bin files."""
    n, ins, outs = ep.name, ep.inputs, ep.outputs
    in_names = {t.name: t.index for t in ins}
    alias = [in_names.get(t.name, -1) if t.role == "updated" else -1 for t in outs]

    def table(specs, tag):
        rows = []
        for t in specs:
            shape = ", ".join(map(str, t.shape)) or "0"
            rows.append(f"static int64_t {tag}_shape{t.index}[] = {{{shape}}};")
        rows.append(f"static const int {tag}_dt[] = {{{', '.join(t.enum for t in specs)}}};")
        rows.append(f"static const int {tag}_nd[] = {{{', '.join(str(len(t.shape)) for t in specs)}}};")
        rows.append(f"static const size_t {tag}_bytes[] = {{{', '.join(str(t.nbytes) for t in specs)}}};")
        rows.append(f"static int64_t *{tag}_shape[] = {{{', '.join(f'{tag}_shape{t.index}' for t in specs)}}};")
        return "\n".join(rows)

    return f"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{n}.h"
#define NI {len(ins)}
#define NO {len(outs)}
{table(ins, "in")}
{table(outs, "out")}
static const int alias[] = {{{', '.join(map(str, alias))}}};
static void *in_data[NI];

static void *xmalloc(size_t n) {{ void *p = malloc(n + 8); memset(p, 0, n + 8); return p; }}
static void load(const char *dir) {{
  char path[4096];
  for (int i = 0; i < NI; i++) {{
    snprintf(path, sizeof path, "%s/in%d.bin", dir, i);
    FILE *f = fopen(path, "rb");
    in_data[i] = xmalloc(in_bytes[i]);
    if (!f || fread(in_data[i], 1, in_bytes[i], f) != in_bytes[i]) {{ fprintf(stderr, "read %s\\n", path); exit(3); }}
    fclose(f);
  }}
}}
static void save(const char *dir, void **outs) {{
  char path[4096];
  for (int j = 0; j < NO; j++) {{
    snprintf(path, sizeof path, "%s/out%d.bin", dir, j);
    FILE *f = fopen(path, "wb"); fwrite(outs[j], 1, out_bytes[j], f); fclose(f);
  }}
}}
static int call(void **ins, void **outs) {{
  tg_tensor ti[NI], to[NO];
  for (int i = 0; i < NI; i++) {{ ti[i].data = ins[i]; ti[i].dtype = in_dt[i]; ti[i].ndim = in_nd[i]; ti[i].shape = in_shape[i]; }}
  for (int j = 0; j < NO; j++) {{ to[j].data = outs[j]; to[j].dtype = out_dt[j]; to[j].ndim = out_nd[j]; to[j].shape = out_shape[j]; }}
  return {n}(ti, NI, to, NO);
}}
static void **fresh_outs(void) {{
  void **o = malloc(sizeof(void *) * NO);
  for (int j = 0; j < NO; j++) o[j] = xmalloc(out_bytes[j]);
  return o;
}}
static void **ref_outs;
static void *worker(void *arg) {{
  long bad = 0;
  void **o = fresh_outs();
  for (int r = 0; r < 200; r++) {{
    if (call(in_data, o)) bad++;
    for (int j = 0; j < NO; j++) if (memcmp(o[j], ref_outs[j], out_bytes[j])) bad++;
  }}
  for (int j = 0; j < NO; j++) free(o[j]);
  free(o);
  return (void *)bad;
}}
int main(int argc, char **argv) {{
  const char *mode = argv[1], *dir = argv[2];
  load(dir);
  if (!strcmp(mode, "run")) {{
    void **o = fresh_outs();
    if (call(in_data, o)) {{ printf("error: %s\\n", {n}_last_error()); return 1; }}
    save(dir, o);
    for (int j = 0; j < NO; j++) free(o[j]);
    free(o);
  }} else if (!strcmp(mode, "steps")) {{  /* updated parameters written over their inputs */
    int k = atoi(argv[3]);
    void **o = fresh_outs();
    for (int j = 0; j < NO; j++) if (alias[j] >= 0) {{ free(o[j]); o[j] = in_data[alias[j]]; }}
    for (int s = 0; s < k; s++) if (call(in_data, o)) {{ printf("error: %s\\n", {n}_last_error()); return 1; }}
    save(dir, o);
    for (int j = 0; j < NO; j++) if (alias[j] < 0) free(o[j]);
    free(o);
  }} else if (!strcmp(mode, "bad")) {{
    void **o = fresh_outs();
    for (int j = 0; j < NO; j++) memset(o[j], 0xAB, out_bytes[j]);
    int64_t saved = in_shape[0][0];
    in_shape[0][0] = saved + 1;
    int rc = call(in_data, o);
    in_shape[0][0] = saved;
    printf("shape rc=%d msg=%s\\n", rc, {n}_last_error());
    tg_tensor none[1];
    rc = {n}(none, NI + 1, none, NO);
    printf("count rc=%d msg=%s\\n", rc, {n}_last_error());
    int wrong = in_dt[0] == TG_FLOAT64 ? TG_FLOAT32 : TG_FLOAT64;
    tg_tensor ti[NI], to[NO];
    for (int i = 0; i < NI; i++) {{ ti[i].data = in_data[i]; ti[i].dtype = i ? in_dt[i] : wrong; ti[i].ndim = in_nd[i]; ti[i].shape = in_shape[i]; }}
    for (int j = 0; j < NO; j++) {{ to[j].data = o[j]; to[j].dtype = out_dt[j]; to[j].ndim = out_nd[j]; to[j].shape = out_shape[j]; }}
    rc = {n}(ti, NI, to, NO);
    printf("dtype rc=%d msg=%s\\n", rc, {n}_last_error());
    int untouched = 1;
    for (int j = 0; j < NO; j++) for (size_t b = 0; b < out_bytes[j]; b++) untouched &= ((unsigned char *)o[j])[b] == 0xAB;
    printf("untouched=%d\\n", untouched);
    for (int j = 0; j < NO; j++) free(o[j]);
    free(o);
  }} else if (!strcmp(mode, "threads")) {{
    ref_outs = fresh_outs();
    if (call(in_data, ref_outs)) return 1;
    pthread_t t[2];
    void *bad[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], &bad[i]);
    printf("threads bad=%ld\\n", (long)bad[0] + (long)bad[1]);
    for (int j = 0; j < NO; j++) free(ref_outs[j]);
    free(ref_outs);
  }}
  for (int i = 0; i < NI; i++) free(in_data[i]);
  return 0;
}}
"""


def build(ep, directory, blas=False):
    """Save, `make`, and link the driver; returns the driver's path."""
    d = str(directory)
    ep.save(d)
    subprocess.run(["make", "-s", "-C", d] + (["BLAS=1"] if blas else []), check=True,
                   capture_output=True, text=True)
    with open(os.path.join(d, "driver.c"), "w") as f:
        f.write(driver_source(ep))
    exe = os.path.join(d, "driver")
    subprocess.run([CC, "-O1", "-o", exe, os.path.join(d, "driver.c"), "-I", d,
                    os.path.join(d, f"lib{ep.name}.a"), "-lm", "-pthread"]
                   + (_blas_libs() if blas else []), check=True, capture_output=True, text=True)
    return exe


def _blas_libs():
    return ["-lopenblas"] if ctypes.util.find_library("openblas") else ["-lcblas"]


def run_driver(exe, directory, arrays, *mode):
    d = str(directory)
    for i, a in enumerate(arrays):
        np.ascontiguousarray(a).tofile(os.path.join(d, f"in{i}.bin"))
    r = subprocess.run([exe, mode[0], d, *mode[1:]], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_outputs(ep, directory):
    return [np.fromfile(os.path.join(str(directory), f"out{j}.bin"), t.dtype.np).reshape(t.shape)
            for j, t in enumerate(ep.outputs)]


def assert_close(got, want, rtol=1e-4, atol=1e-5):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol, err_msg=f"output {k}")


# ----------------------------------------------------------------------------- the three functions
def make_forward():
    tg.manual_seed(1)
    W, b = tg.randn(6, 5), tg.randn(5)

    def forward(x):
        h = (x @ W + b).tanh()
        return h.exp().sum(dim=1), h.amax(dim=0)
    return forward, (tg.randn(4, 6),)


def make_loss_and_grads():
    tg.manual_seed(2)
    W = tg.randn(6, 3, requires_grad=True)
    b = tg.randn(3, requires_grad=True)

    def loss_and_grads(x, y):
        loss = ((x @ W + b).sigmoid() - y).square().mean()
        gW, gb = tg.autograd.grad(loss, [W, b])
        return loss, gW, gb
    return loss_and_grads, (tg.randn(8, 6, dtype=tg.float64).float(), tg.rand(8, 3))


def make_train_step():
    tg.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = tg.optim.SGD(model.parameters(), lr=0.1)

    def train_step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    x = tg.randn(10, 5)
    y = tg.tensor(np.arange(10) % 3)
    train_step(x, y)  # one eager step first: .grad tensors exist, zero_grad sets them to None
    return train_step, (x, y)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = {}
    for make in (make_forward, make_loss_and_grads, make_train_step):
        fn, args = make()
        ep = tg.export(fn, *args)
        d = tmp_path_factory.mktemp(ep.name)
        out[ep.name] = (fn, args, ep, d, build(ep, d))
    return out


def test_forward_matches_eager(built):
    fn, args, ep, d, exe = built["forward"]
    assert [n for n, _, _ in ep.signature["inputs"]] == ["x", "W", "b"]  # lifted after the arguments
    run_driver(exe, d, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, d), [r.detach().numpy() for r in fn(*args)])


def test_loss_and_grads_match_eager(built):
    fn, args, ep, d, exe = built["loss_and_grads"]
    assert ep.signature["inputs"] == [("x", (8, 6), "float32"), ("y", (8, 3), "float32"),
                                      ("W", (6, 3), "float32"), ("b", (3,), "float32")]
    run_driver(exe, d, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, d), [r.detach().numpy() for r in fn(*args)])


def test_train_step_matches_eager(built):
    fn, args, ep, d, exe = built["train_step"]
    roles = [t.role for t in ep.outputs]
    assert roles[0] == "result" and set(roles[1:]) == {"updated"}
    assert [t.name for t in ep.outputs[1:5]] == [t.name for t in ep.inputs[2:6]]  # params in input order
    inputs = ep.example_inputs()
    loss = fn(*args)  # eager: updates the model in place
    run_driver(exe, d, inputs, "run")
    got = read_outputs(ep, d)
    assert_close(got, [loss.detach().numpy()] + ep.updated_values())
    # in place: parameters passed as their own outputs, three steps in C vs three eager steps
    inputs = ep.example_inputs()
    losses = [fn(*args) for _ in range(3)]
    run_driver(exe, d, inputs, "steps", "3")
    got = read_outputs(ep, d)
    assert_close(got, [losses[-1].detach().numpy()] + ep.updated_values())


def test_wrong_inputs_are_rejected_before_writing(built):
    fn, args, ep, d, exe = built["loss_and_grads"]
    out = run_driver(exe, d, ep.example_inputs(), "bad")
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)
    assert lines["shape"].startswith("rc=1 ") and "input 0 (x): expected shape [8, 6], given [9, 6]" in lines["shape"]
    assert "expected 4 inputs and 3 outputs, given 5 inputs and 3 outputs" in lines["count"]
    assert "input 0 (x): expected dtype float32, given float64" in lines["dtype"]
    assert "untouched=1" in out


def test_two_threads_at_once(built):
    fn, args, ep, d, exe = built["train_step"]
    assert "threads bad=0" in run_driver(exe, d, ep.example_inputs(), "threads")


def _asan_works(tmp):
    src = os.path.join(tmp, "probe.c")
    with open(src, "w") as f:
        f.write("int main(void) { return 0; }\n")
    r = subprocess.run([CC, "-fsanitize=address", src, "-o", os.path.join(tmp, "probe")], capture_output=True)
    return r.returncode == 0 and subprocess.run([os.path.join(tmp, "probe")]).returncode == 0


def test_driver_clean_under_asan(built, tmp_path):
    if not _asan_works(str(tmp_path)):
        pytest.skip("no AddressSanitizer")
    for name in ("loss_and_grads", "train_step"):
        fn, args, ep, d, _ = built[name]
        exe = os.path.join(str(d), "driver_asan")
        subprocess.run([CC, "-g", "-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-o", exe,
                        os.path.join(str(d), "driver.c"), os.path.join(str(d), f"{ep.name}.c"), "-I", str(d),
                        "-lm", "-pthread"], check=True, capture_output=True, text=True)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1")
        for mode in (["run"], ["bad"], ["steps", "2"]):
            inputs = ep.example_inputs()
            for i, a in enumerate(inputs):
                a.tofile(os.path.join(str(d), f"in{i}.bin"))
            r = subprocess.run([exe, mode[0], str(d), *mode[1:]], capture_output=True, text=True, env=env, timeout=60)
            assert r.returncode == 0 and "ERROR" not in r.stderr and "runtime error" not in r.stderr, r.stderr


def test_blas_build(built, tmp_path):
    fn, args, ep, d, _ = built["loss_and_grads"]
    if ctypes.util.find_library("openblas") is None and ctypes.util.find_library("cblas") is None:
        # no system cblas to link: still check the BLAS=1 code compiles and calls cblas
        ep.save(str(tmp_path))
        subprocess.run(["make", "-s", "-C", str(tmp_path), "BLAS=1", f"lib{ep.name}.a"], check=True,
                       capture_output=True, text=True)
        syms = subprocess.run(["nm", str(tmp_path / f"lib{ep.name}.a")], capture_output=True, text=True).stdout
        assert "U cblas_sgemm" in syms
        pytest.skip("no system cblas to link (compiled BLAS=1 only)")
    exe = build(ep, tmp_path, blas=True)
    run_driver(exe, tmp_path, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, tmp_path), [r.detach().numpy() for r in fn(*args)])


def test_directory_contents_and_readme(built):
    fn, args, ep, d, _ = built["train_step"]
    names = set(os.listdir(str(d)))
    assert {"train_step.h", "train_step.c", "Makefile", "CMakeLists.txt", "README.md",
            "libtrain_step.so", "libtrain_step.a"} <= names
    readme = open(os.path.join(str(d), "README.md")).read()
    assert "model.0.weight" in readme and "int main(void)" in readme
    header = open(os.path.join(str(d), "train_step.h")).read()
    assert "#define TRAIN_STEP_IN_MODEL_0_WEIGHT_SHAPE { 16, 5 }" in header
    # the shared library exports only the ABI (plus nothing Python-only)
    syms = subprocess.run(["nm", "-D", "--defined-only", os.path.join(str(d), "libtrain_step.so")],
                          capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in syms.splitlines() if " T " in line}
    assert exported == {"train_step", "train_step_last_error"}
    assert "train_step" in str(ep) and "model.0.weight" in str(ep)


def test_readme_example_compiles_and_runs(built):
    fn, args, ep, d, _ = built["forward"]
    exe = os.path.join(str(d), "example")
    subprocess.run([CC, os.path.join(str(d), "example.c"), "-I", str(d), os.path.join(str(d), "libforward.a"),
                    "-lm", "-o", exe], check=True, capture_output=True, text=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0 and "result[0][0] =" in r.stdout


def test_errors():
    with pytest.raises(CompileError, match="graph break"):
        tg.export(lambda x: x * 2 if x.sum() > 0 else x, tg.ones(3), name="brk")
    # dynamic=True is supported (tests/test_export_dynamic.py): the batch dim is written "B"
    assert tg.export(lambda x: x, tg.ones(3), name="d", dynamic=True).signature["outputs"] == [("result", ("B",), "float32")]
    with pytest.raises(CompileError, match="split=True"):  # nothing requires grad
        tg.export(lambda x: x * 2, tg.ones(3), name="s", split=True)
    with pytest.raises(ValueError, match="C identifier"):
        tg.export(lambda x: x * 2, tg.ones(3))
    with pytest.raises(ValueError, match="hides the C library's <features.h>"):
        tg.export(lambda x: x * 2, tg.ones(3), name="features")  # glibc's <stdio.h> includes it


def test_cli_export(tmp_path):
    from tracegrad.tools import cli

    src = tmp_path / "fns.py"
    src.write_text("def affine(x, scale):\n    return (x * scale + 1).relu()\n")
    out = tmp_path / "lib"
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "--arg", "scale=2.0",
                     "-o", str(out)]) == 0
    header = (out / "affine.h").read_text()
    assert "int affine(const tg_tensor *inputs" in header and "AFFINE_IN_X_SHAPE { 4, 3 }" in header
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "-o", str(out)]) == 2  # missing scale


# ----------------------------------------------------------------------------- split=True
def split_driver_source(sp):
    """Runs <name>_forward on in<i>.bin, then <name>_backward on the forward's saved outputs and
    the incoming gradients g<k>.bin; writes f<j>.bin and b<j>.bin. Mode "bad" gives each entry
    one wrong shape and prints return code and message."""
    f, b = sp.forward, sp.backward
    n_saved = len(f.outputs) - sum(t.role == "result" for t in f.outputs)
    n_res = len(f.outputs) - n_saved

    def table(specs, tag):
        rows = [f"static int64_t {tag}_shape{t.index}[] = {{{', '.join(map(str, t.shape)) or '0'}}};"
                for t in specs]
        rows.append(f"static tg_tensor {tag}[] = {{{', '.join(f'{{0, {t.enum}, {len(t.shape)}, {tag}_shape{t.index}}}' for t in specs)}}};")
        rows.append(f"static const size_t {tag}_bytes[] = {{{', '.join(str(t.nbytes) for t in specs)}}};")
        return "\n".join(rows)

    return f"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{sp.name}.h"
{table(f.inputs, "fi")}
{table(f.outputs, "fo")}
{table(b.inputs, "bi")}
{table(b.outputs, "bo")}
static void *xmalloc(size_t n) {{ void *p = malloc(n + 8); memset(p, 0xAB, n + 8); return p; }}
static void io(const char *dir, const char *tag, int j, void *buf, size_t n, int write) {{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%d.bin", dir, tag, j);
  FILE *fp = fopen(path, write ? "wb" : "rb");
  if (!fp || (write ? fwrite(buf, 1, n, fp) : fread(buf, 1, n, fp)) != n) {{ fprintf(stderr, "io %s\\n", path); exit(3); }}
  fclose(fp);
}}
int main(int argc, char **argv) {{
  const char *dir = argv[2];
  int bad = !strcmp(argv[1], "bad");
  for (int i = 0; i < {len(f.inputs)}; i++) {{ fi[i].data = xmalloc(fi_bytes[i]); io(dir, "in", i, fi[i].data, fi_bytes[i], 0); }}
  for (int j = 0; j < {len(f.outputs)}; j++) fo[j].data = xmalloc(fo_bytes[j]);
  for (int j = 0; j < {len(b.outputs)}; j++) bo[j].data = xmalloc(bo_bytes[j]);
  /* the backward reads the forward's saved outputs in place: the same buffers */
  for (int j = 0; j < {n_saved}; j++) bi[j].data = fo[{n_res} + j].data;
  for (int k = {n_saved}; k < {len(b.inputs)}; k++) {{ bi[k].data = xmalloc(bi_bytes[k]); io(dir, "g", k - {n_saved}, bi[k].data, bi_bytes[k], 0); }}
  if (bad) {{
    fi_shape0[0] += 1;
    int rc = {f.name}(fi, {f.NAME}_N_INPUTS, fo, {f.NAME}_N_OUTPUTS);
    unsigned char *p = (unsigned char *)fo[0].data;
    printf("forward %d %d %s\\n", rc, p[0] == 0xAB, {f.name}_last_error());
    fi_shape0[0] -= 1;
    bi_shape{len(b.inputs) - 1}[0] += 1;
    rc = {b.name}(bi, {b.NAME}_N_INPUTS, bo, {b.NAME}_N_OUTPUTS);
    p = (unsigned char *)bo[0].data;
    printf("backward %d %d %s\\n", rc, p[0] == 0xAB, {b.name}_last_error());
    rc = {b.name}(bi, {b.NAME}_N_INPUTS - 1, bo, {b.NAME}_N_OUTPUTS);
    printf("count %d %s\\n", rc, {b.name}_last_error());
    return 0;
  }}
  if ({f.name}(fi, {f.NAME}_N_INPUTS, fo, {f.NAME}_N_OUTPUTS)) {{ printf("error: %s\\n", {f.name}_last_error()); return 1; }}
  if ({b.name}(bi, {b.NAME}_N_INPUTS, bo, {b.NAME}_N_OUTPUTS)) {{ printf("error: %s\\n", {b.name}_last_error()); return 1; }}
  for (int j = 0; j < {len(f.outputs)}; j++) io(dir, "f", j, fo[j].data, fo_bytes[j], 1);
  for (int j = 0; j < {len(b.outputs)}; j++) io(dir, "b", j, bo[j].data, bo_bytes[j], 1);
  return 0;
}}
"""


@pytest.fixture(scope="module")
def split_built(tmp_path_factory):
    tg.manual_seed(3)
    W = tg.randn(5, 3, requires_grad=True)
    b = tg.randn(3, requires_grad=True)

    def loss(x, y):
        h = x @ W + b - y
        return (h ** 2).mean(), h.tanh().sum(dim=0)

    x, y = tg.randn(8, 5, requires_grad=True), tg.randn(8, 3)
    sp = tg.export(loss, x, y, split=True)
    d = tmp_path_factory.mktemp("split")
    sp.save(str(d))
    subprocess.run(["make", "-s", "-C", str(d)], check=True, capture_output=True, text=True)
    with open(os.path.join(str(d), "driver.c"), "w") as fh:
        fh.write(split_driver_source(sp))
    exe = os.path.join(str(d), "driver")
    subprocess.run([CC, "-O1", "-o", exe, os.path.join(str(d), "driver.c"), "-I", str(d),
                    os.path.join(str(d), "libloss.a"), "-lm"], check=True, capture_output=True, text=True)
    # the incoming gradients the driver reads (every test of the driver needs them)
    rng = np.random.default_rng(0)
    g0, g1 = np.float32(0.7), rng.standard_normal(3).astype(np.float32)
    for k, g in enumerate((g0, g1)):
        np.asarray(g, np.float32).tofile(os.path.join(str(d), f"g{k}.bin"))
    return sp, d, exe, (loss, x, y, W, b, g0, g1)


def test_split_forward_then_backward_matches_eager(split_built):
    sp, d, exe, (loss, x, y, W, b, g0, g1) = split_built
    f, bw = sp.forward, sp.backward
    assert [t.name for t in f.inputs] == ["x", "y", "W", "b"]
    assert [t.role for t in f.outputs][:2] == ["result", "result"]
    assert [t.name for t in bw.outputs] == ["grad x", "grad W", "grad b"]
    assert [t.name for t in bw.inputs if t.role == "incoming gradient"] == ["grad result[0]", "grad result[1]"]
    run_driver(exe, d, sp.example_inputs(), "run")
    fouts = [np.fromfile(os.path.join(str(d), f"f{j}.bin"), t.dtype.np).reshape(t.shape)
             for j, t in enumerate(f.outputs)]
    bouts = [np.fromfile(os.path.join(str(d), f"b{j}.bin"), t.dtype.np).reshape(t.shape)
             for j, t in enumerate(bw.outputs)]
    # eager tracegrad: outputs, then .backward() with the same incoming gradients
    for t in (x, W, b):
        t.grad = None
    l, s = loss(x, y)
    assert_close(fouts[:2], [l.detach().numpy(), s.detach().numpy()])
    tg.autograd.backward([l, s], [tg.tensor(g0), tg.tensor(g1)])
    assert_close(bouts, [x.grad.numpy(), W.grad.numpy(), b.grad.numpy()])
    # and the PyTorch oracle, where it is installed
    torch = pytest.importorskip("torch")
    tx, tW, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, W, b))
    h = tx @ tW + tb - torch.tensor(y.numpy())
    torch.autograd.backward([(h ** 2).mean(), h.tanh().sum(dim=0)], [torch.tensor(g0), torch.tensor(g1)])
    assert_close(bouts, [tx.grad.numpy(), tW.grad.numpy(), tb.grad.numpy()])


def test_split_rejects_wrong_shapes(split_built):
    sp, d, exe, _ = split_built
    out = run_driver(exe, d, sp.example_inputs(), "bad")
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in out.strip().splitlines()}
    assert lines["forward"].startswith("1 1 loss_forward: input 0 (x): expected shape [8, 5], given [9, 5]")
    last = sp.backward.inputs[-1]
    assert lines["backward"].startswith(f"1 1 loss_backward: input {last.index} ({last.name}): expected shape [3], given [4]")
    assert "expected" in lines["count"] and lines["count"].startswith("1 ")


def test_split_library_files(split_built):
    sp, d, _, _ = split_built
    names = set(os.listdir(str(d)))
    assert {"loss.h", "loss_forward.c", "loss_backward.c", "Makefile", "CMakeLists.txt", "README.md",
            "libloss.so", "libloss.a", "example.c"} <= names
    header = open(os.path.join(str(d), "loss.h")).read()
    assert "int loss_forward(const tg_tensor *inputs" in header and "LOSS_BACKWARD_N_OUTPUTS 3" in header
    assert "#define LOSS_FORWARD_IN_W_SHAPE { 5, 3 }" in header
    readme = open(os.path.join(str(d), "README.md")).read()
    assert "### `loss_backward`" in readme and "saved[0]" in readme
    syms = subprocess.run(["nm", "-D", "--defined-only", os.path.join(str(d), "libloss.so")],
                          capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in syms.splitlines() if " T " in line}
    assert exported == {"loss_forward", "loss_forward_last_error", "loss_backward", "loss_backward_last_error"}
    exe = os.path.join(str(d), "example")
    subprocess.run([CC, os.path.join(str(d), "example.c"), "-I", str(d), os.path.join(str(d), "libloss.a"),
                    "-lm", "-o", exe], check=True, capture_output=True, text=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0 and "grad W[0] =" in r.stdout, r.stdout + r.stderr
    assert set(sp.signature) == {"forward", "backward"} and "loss_backward" in str(sp)


def test_split_driver_clean_under_asan(split_built, tmp_path):
    sp, d, _, _ = split_built
    if not _asan_works(str(tmp_path)):
        pytest.skip("no working AddressSanitizer")
    exe = os.path.join(str(tmp_path), "driver_asan")
    subprocess.run([CC, "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                    "-o", exe, os.path.join(str(d), "driver.c"), os.path.join(str(d), "loss_forward.c"),
                    os.path.join(str(d), "loss_backward.c"), "-I", str(d), "-lm"],
                   check=True, capture_output=True, text=True)
    run_driver(exe, d, sp.example_inputs(), "run")
    run_driver(exe, d, sp.example_inputs(), "bad")


def _exported_matches_eager(fn, args, tmp_path):
    """``fn`` exported, built and run by the driver: its outputs equal eager's."""
    ep = tg.export(fn, *args)
    exe = build(ep, tmp_path)
    run_driver(exe, tmp_path, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, tmp_path), [r.detach().numpy() for r in fn(*args)], rtol=1e-10, atol=1e-10)


def test_exported_linear_solve_and_its_gradient(tmp_path):
    """A solve, a determinant and their gradients run in the exported C library (the LU
    kernels are part of every library's runtime) as eagerly."""
    A = tg.tensor(np.eye(3) * 2 + np.arange(9.0).reshape(3, 3) * 0.1, requires_grad=True)

    def solve_and_grad(b):
        x = tg.linalg.solve(A, b)
        loss = x.square().sum() + tg.linalg.det(A)
        return x, tg.autograd.grad(loss, A)[0]

    args = (tg.tensor(np.arange(6.0).reshape(3, 2)),)
    _exported_matches_eager(solve_and_grad, args, tmp_path)


def test_exported_decompositions_and_their_gradients(tmp_path):
    """eigh, svd and qr (Jacobi and Householder kernels in every library's runtime) and their
    gradients run in the exported C library as eagerly."""
    rng = np.random.default_rng(3)
    A = tg.tensor(rng.standard_normal((4, 3)), requires_grad=True)

    def decompose_and_grad(s):
        w, v = tg.linalg.eigh(s + s.T)
        u, sv, vh = tg.linalg.svd(A, full_matrices=False)
        q, r = tg.linalg.qr(A)
        loss = (v * w.exp()).sum() + (u.abs() * sv).sum() + vh.abs().sum() + (q * r.sum()).sum()
        return w, v, u, sv, vh, q, r, tg.autograd.grad(loss, A)[0]

    args = (tg.tensor(rng.standard_normal((3, 3))),)
    _exported_matches_eager(decompose_and_grad, args, tmp_path)


def test_exported_scans_scatters_and_special_functions(tmp_path):
    """This session's kernels (scans, scatter reductions, Cholesky, special functions) and their
    gradients run in the exported C library as eagerly."""
    rng = np.random.default_rng(4)
    W = tg.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    index = tg.tensor([[0, 1, 0, 2], [2, 2, 1, 0]])

    def features_and_grad(x):
        spd = x @ x.T + tg.eye(3, dtype=x.dtype)
        out = (W.cumprod(1).sum() + W.logcumsumexp(0).sum() + W.cummax(1).values.sum()
               + W.scatter_reduce(0, index, W[:2] * 2, "amax").sum()
               + tg.digamma(W).sum() + tg.lgamma(W).sum() + tg.erfinv(W / 3).sum()
               + tg.linalg.cholesky(spd).sum())
        return out, tg.autograd.grad(out, W)[0]

    args = (tg.tensor(rng.standard_normal((3, 3))),)
    _exported_matches_eager(features_and_grad, args, tmp_path)


# ----------------------------------------------------------------------------- every op with a C lowering
def _has_c_lowering(op):
    """Whether the C backend lowers ``op`` within a loop nest or as a view (its rule in
    backends/c/rules.RULES, found by the op object, or its OpDef's elementwise expression).
    Kernels of their own are left out, as before (the old name lookup never found them)."""
    from tracegrad.compiler.backends.c.rules import RULES, Unsupported

    try:
        return RULES.rule_for(op).kind != "kernel"
    except Unsupported:
        return False


def _lowered_ops():
    from tracegrad.ops import samples
    from tracegrad.ops.registry import REGISTRY

    ops = [REGISTRY[n] for n in sorted(REGISTRY) if _has_c_lowering(REGISTRY[n])]
    unsampled = {op.name for op in ops if not samples.cases(op)}
    # nonzero's result shape depends on the data: it never appears in a captured graph
    assert unsampled <= {"nonzero"}, f"ops with a C lowering and no sample: {sorted(unsampled)}"
    return [op for op in ops if op.name not in unsampled]


N_OP_LIBRARIES = 3  # the ops are spread over this many libraries (one build each)


def _op_step(op, attrs, diff):
    """``op``'s result and, through tg.autograd.grad inside the function, the gradients of
    ``sum(out * cot)`` with respect to its differentiable inputs (tests/test_backend_c.py's)."""
    def step(*xs):
        out = op(*xs, **attrs)
        if not diff:
            return [out]
        cot = tg.ones(out.shape, dtype=out.dtype) + tg.arange(out.numel(), dtype=out.dtype).reshape(out.shape) * 0.01
        grads = tg.autograd.grad((out * cot).sum(), [xs[i] for i in diff], allow_unused=True)
        return [out.detach()] + [g for g in grads if g is not None]
    return step


def _ops_library(group, dtype):
    """One function applying every (op, sample number) of ``group`` to that sample (and its
    gradients), its example tensors, and a list filled by an eager call with (what, number of
    results)."""
    from tracegrad.ops import samples

    steps, tensors = [], []
    for op, k in group:
        arrays, attrs = samples.cases(op, dtype)[k]
        diff = samples.differentiable_positions(op, arrays) if op.differentiable else []
        steps.append((f"{op.name} sample {k}", _op_step(op, attrs, diff), len(arrays)))
        tensors += [tg.tensor(a.copy(), requires_grad=i in diff) for i, a in enumerate(arrays)]
    layout = []

    def all_ops(*xs):
        results, pos = [], 0
        layout.clear()
        for name, step, n in steps:
            res = step(*xs[pos:pos + n])
            pos += n
            layout.append((name, len(res)))
            results += res
        return tuple(results)
    return all_ops, tensors, layout


def _call_shared_library(ep, path, arrays, fails_with=None):
    """Call ``ep``'s entry point in the shared library ``path`` through ctypes: its outputs, or
    with ``fails_with`` (a return code), the message of the failure it must report."""
    class Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("shape", ctypes.POINTER(ctypes.c_int64))]

    enum = {"TG_FLOAT32": 0, "TG_FLOAT64": 1, "TG_INT64": 2, "TG_INT32": 3, "TG_BOOL": 4}
    lib = ctypes.CDLL(path)
    outs = [np.zeros(t.shape, t.dtype.np) for t in ep.outputs]
    keep = []

    def tensors(specs, arrs):
        ts = (Tensor * max(len(specs), 1))()
        for k, (t, a) in enumerate(zip(specs, arrs)):
            shape = (ctypes.c_int64 * max(len(t.shape), 1))(*t.shape)
            keep.append(shape)
            ts[k] = Tensor(a.ctypes.data, enum[t.enum], len(t.shape), shape)
        return ts
    arrays = [np.ascontiguousarray(a) for a in arrays]
    entry = getattr(lib, ep.name)
    rc = entry(tensors(ep.inputs, arrays), len(ep.inputs), tensors(ep.outputs, outs), len(ep.outputs))
    lib_error = getattr(lib, f"{ep.name}_last_error")
    lib_error.restype = ctypes.c_char_p
    if fails_with is not None:
        assert rc == fails_with, (rc, lib_error())
        return lib_error().decode()
    assert rc == 0, lib_error()
    return outs


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("part", range(N_OP_LIBRARIES))
def test_every_op_with_a_c_lowering_runs_in_an_exported_library(part, dtype, tmp_path):
    """Every registry op the C backend lowers, on each of its samples, with its gradients (through
    tg.autograd.grad in the exported function), in a library built by the generated Makefile
    with a plain C compiler: run by the C driver (static library) and through ctypes (shared
    library), the results are eager's; two threads calling at once get the same results; the
    float64 libraries run clean under AddressSanitizer and UBSan. The sources also build as strict
    ISO C11, and the shared library needs nothing beyond libc and libm (no BLAS, no OpenMP runtime)."""
    from tracegrad.ops import samples

    cases = [(op, k) for op in _lowered_ops() for k in range(len(samples.cases(op)))]
    group = cases[part::N_OP_LIBRARIES]
    fn, tensors, layout = _ops_library(group, dtype)
    ep = tg.export(fn, *tensors, name=f"ops{part}")
    exe = build(ep, tmp_path)
    want = [r.detach().numpy() for r in fn(*tensors)]
    names = [f"{name} result {k}" for name, n in layout for k in range(n)]
    assert len(names) == len(want) == len(ep.outputs)
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-5)
    run_driver(exe, tmp_path, ep.example_inputs(), "run")
    from_so = _call_shared_library(ep, str(tmp_path / f"libops{part}.so"), ep.example_inputs())
    for got in (read_outputs(ep, tmp_path), from_so):
        for g, w, what in zip(got, want, names):
            assert g.shape == w.shape and g.dtype == w.dtype, what
            np.testing.assert_allclose(g, w, err_msg=what, **tol)
    assert "threads bad=0" in run_driver(exe, tmp_path, ep.example_inputs(), "threads")  # no shared state
    if dtype == np.float64 and _asan_works(str(tmp_path)):
        asan = str(tmp_path / "driver_asan")
        subprocess.run([CC, "-g", "-O1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-o", asan,
                        str(tmp_path / "driver.c"), str(tmp_path / f"ops{part}.c"), "-I", str(tmp_path), "-lm",
                        "-pthread"], check=True, capture_output=True, text=True)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1")
        r = subprocess.run([asan, "run", str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
        assert r.returncode == 0 and "ERROR" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-3000:]
    r = subprocess.run([CC, "-std=c11", "-pedantic-errors", "-fsyntax-only", "-I", str(tmp_path),
                        str(tmp_path / f"ops{part}.c")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    if shutil.which("objdump"):
        dyn = subprocess.run(["objdump", "-p", str(tmp_path / f"libops{part}.so")], capture_output=True,
                             text=True, check=True).stdout
        needed = sorted(line.split()[-1] for line in dyn.splitlines() if line.strip().startswith("NEEDED"))
        # libc, libm, and the dynamic loader (its __tls_get_addr: the error buffer is thread-local)
        assert all(re.match(r"(lib[cm]|ld-linux[\w-]*|ld64)\.so", n) for n in needed), needed


def test_cli_export_builds_special_functions_and_factorizations(tmp_path):
    """`python -m tracegrad export ... --build` on a function of Bessel functions, zeta and
    slogdet with its gradient: the library builds, and its example program prints eager's values."""
    from tracegrad.tools import cli

    src = tmp_path / "fns.py"
    src.write_text(
        "import tracegrad as tg\n\n"
        "def special_features(x, A):\n"
        "    y = tg.special.bessel_j0(x) + tg.special.modified_bessel_k1(x.abs() + 0.1) + tg.special.zeta(x + 1.5, x + 0.5)\n"
        "    sign, logdet = tg.linalg.slogdet(A + 3 * tg.eye(3, dtype=A.dtype))\n"
        "    return y, logdet, tg.autograd.grad(y.sum() + logdet, A)[0]\n")
    out = tmp_path / "lib"
    assert cli.main(["export", f"{src}:special_features", "--arg", "x=f64[4,5]", "--arg", "A=f64[3,3]:grad",
                     "-o", str(out), "--build"]) == 0
    exe = str(out / "example")
    subprocess.run([CC, "-o", exe, str(out / "example.c"), "-I", str(out), str(out / "libspecial_features.a"), "-lm"],
                   check=True, capture_output=True, text=True)
    printed = subprocess.run([exe], check=True, capture_output=True, text=True).stdout.split()
    # example.c fills input i with 0.01 * (i % 17) and prints element 0 of each output
    x = tg.tensor(0.01 * (np.arange(20) % 17).reshape(4, 5))
    A = tg.tensor(0.01 * (np.arange(9) % 17).reshape(3, 3), requires_grad=True)
    ns = {}
    exec(src.read_text(), ns)
    want = [r.detach().numpy().reshape(-1)[0] for r in ns["special_features"](x, A)]
    np.testing.assert_allclose([float(v) for v in printed[2::3]], want, rtol=1e-5)


def test_exported_small_integer_dtypes(tmp_path):
    """int8, uint8 and int16 inputs and outputs: their C ABI codes, wrapping arithmetic."""
    def small_ints(x, y):
        return x * y, x.to(tg.int16) * 300, (y >> 1).sum()

    args = (tg.tensor(np.array([1, -2, 3, 127], np.int8)), tg.tensor(np.array([100, 200, 255, 0], np.uint8)))
    ep = tg.export(small_ints, *args)
    assert [t.enum for t in ep.inputs] == ["TG_INT8", "TG_UINT8"]
    assert [t.enum for t in ep.outputs] == ["TG_INT16", "TG_INT16", "TG_INT64"]
    assert "TG_INT16 = 5, TG_INT8 = 6, TG_UINT8 = 7" in ep.files()[f"{ep.name}.h"]
    _exported_matches_eager(small_ints, args, tmp_path)

