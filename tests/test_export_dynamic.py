"""tg.export(dynamic=True): one C library whose batch size is a runtime value.

An MLP's loss-and-gradients and a whole SGD training step are exported once (at batch size 8),
built with `make`, linked into a C driver written here and called at batch sizes 1, 3, 64 and
100; every output is compared with eager tracegrad at that size. The driver takes the shapes
from the library's own `<name>_shape(output, index, B, shape)`, and its "bad" mode gives wrong
shapes (a non-batch dim, B inconsistent between two inputs, a wrong output shape, a negative
B) and prints return codes and messages. Functions that branch on the batch size or are not
linear in it raise CompileError.
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
from tracegrad.compiler import CompileError
from test_export import assert_close  # (tests/ is on sys.path, as for oracle)

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None or shutil.which("make") is None,
                                reason="needs a C compiler and make")
CC = os.environ.get("CC", "cc")
BATCHES = (1, 3, 64, 100)


def driver_source(ep):
    """Modes (argv: mode dir B ...): run, steps K (updated outputs written over their inputs),
    bad (wrong shapes: prints "<case> rc=<rc> untouched=<0|1> msg=<message>")."""
    n, ins, outs = ep.name, ep.inputs, ep.outputs
    in_names = {t.name: t.index for t in ins}
    alias = [in_names.get(t.name, -1) if t.role == "updated" else -1 for t in outs]
    second_b = next((t.index for t in ins[1:] if t.dynamic), -1)  # another input carrying B
    static_dim = next(((t.index, d) for t in ins if t.dynamic for d, (a, _) in enumerate(t.dims) if a == 0),
                      (0, 0))
    # the output to give a wrong shape: the first with a dynamic shape, else the first with a dim
    bad_out = next((t.index for t in outs if t.dynamic), None)
    bad_out = next((t.index for t in outs if t.shape), 0) if bad_out is None else bad_out
    return f"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "{n}.h"
#define NI {len(ins)}
#define NO {len(outs)}
static const int in_dt[] = {{{', '.join(t.enum for t in ins)}}};
static const int out_dt[] = {{{', '.join(t.enum for t in outs)}}};
static const int in_sz[] = {{{', '.join(str(t.dtype.itemsize) for t in ins)}}};
static const int out_sz[] = {{{', '.join(str(t.dtype.itemsize) for t in outs)}}};
static const int alias[] = {{{', '.join(map(str, alias))}}};
static int64_t in_shape[NI][8], out_shape[NO][8];
static int in_nd[NI], out_nd[NO];
static size_t in_bytes[NI], out_bytes[NO];
static void *in_data[NI];

static size_t shapes(int output, int i, int64_t B, int64_t *shape, int *nd) {{
  *nd = {n}_shape(output, i, B, shape);
  size_t b = (size_t)(output ? out_sz[i] : in_sz[i]);
  for (int d = 0; d < *nd; d++) b *= (size_t)shape[d];
  return b;
}}
static void *xmalloc(size_t n) {{ void *p = malloc(n + 8); memset(p, 0, n + 8); return p; }}
static void io(const char *dir, const char *tag, int j, void *buf, size_t n, int write) {{
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%d.bin", dir, tag, j);
  FILE *f = fopen(path, write ? "wb" : "rb");
  if (!f || (n && (write ? fwrite(buf, 1, n, f) : fread(buf, 1, n, f)) != n)) {{ fprintf(stderr, "io %s\\n", path); exit(3); }}
  fclose(f);
}}
static int call(void **ins, void **outs) {{
  tg_tensor ti[NI], to[NO];
  for (int i = 0; i < NI; i++) {{ ti[i].data = ins[i]; ti[i].dtype = in_dt[i]; ti[i].ndim = in_nd[i]; ti[i].shape = in_shape[i]; }}
  for (int j = 0; j < NO; j++) {{ to[j].data = outs[j]; to[j].dtype = out_dt[j]; to[j].ndim = out_nd[j]; to[j].shape = out_shape[j]; }}
  return {n}(ti, NI, to, NO);
}}
static int run_bad(void **o) {{
  for (int j = 0; j < NO; j++) memset(o[j], 0xAB, out_bytes[j]);
  return call(in_data, o);
}}
static void report(const char *what, int rc, void **o) {{
  int untouched = 1;
  for (int j = 0; j < NO; j++) for (size_t b = 0; b < out_bytes[j]; b++) untouched &= ((unsigned char *)o[j])[b] == 0xAB;
  printf("%s rc=%d untouched=%d msg=%s\\n", what, rc, untouched, {n}_last_error());
}}
int main(int argc, char **argv) {{
  const char *mode = argv[1], *dir = argv[2];
  const int64_t B = atoll(argv[3]);
  for (int i = 0; i < NI; i++) {{ in_bytes[i] = shapes(0, i, B, in_shape[i], &in_nd[i]); in_data[i] = xmalloc(in_bytes[i]); io(dir, "in", i, in_data[i], in_bytes[i], 0); }}
  void *o[NO];
  for (int j = 0; j < NO; j++) {{ out_bytes[j] = shapes(1, j, B, out_shape[j], &out_nd[j]); o[j] = xmalloc(out_bytes[j]); }}
  if (!strcmp(mode, "run")) {{
    if (call(in_data, o)) {{ printf("error: %s\\n", {n}_last_error()); return 1; }}
  }} else if (!strcmp(mode, "steps")) {{
    for (int j = 0; j < NO; j++) if (alias[j] >= 0) {{ free(o[j]); o[j] = in_data[alias[j]]; }}
    for (int s = 0; s < atoi(argv[4]); s++) if (call(in_data, o)) {{ printf("error: %s\\n", {n}_last_error()); return 1; }}
  }} else {{
    in_shape[{static_dim[0]}][{static_dim[1]}] -= 1;
    report("dim", run_bad(o), o);
    in_shape[{static_dim[0]}][{static_dim[1]}] += 1;
    if ({second_b} >= 0) {{
      in_shape[{second_b if second_b >= 0 else 0}][0] += 1;
      report("inconsistent", run_bad(o), o);
      in_shape[{second_b if second_b >= 0 else 0}][0] -= 1;
    }}
    out_shape[{bad_out}][0] += 1;
    report("output", run_bad(o), o);
    out_shape[{bad_out}][0] -= 1;
    in_shape[{ep.batch_input[0]}][{ep.batch_input[1]}] = -2;
    report("negative", run_bad(o), o);
    in_shape[{ep.batch_input[0]}][{ep.batch_input[1]}] = B;
    report("ok", call(in_data, o), o);
  }}
  for (int j = 0; j < NO; j++) io(dir, "out", j, o[j], out_bytes[j], 1);
  for (int j = 0; j < NO; j++) if (strcmp(mode, "steps") || alias[j] < 0) free(o[j]);
  for (int i = 0; i < NI; i++) free(in_data[i]);
  return 0;
}}
"""


def build(ep, directory):
    d = str(directory)
    ep.save(d)
    subprocess.run(["make", "-s", "-C", d], check=True, capture_output=True, text=True)
    with open(os.path.join(d, "driver.c"), "w") as f:
        f.write(driver_source(ep))
    exe = os.path.join(d, "driver")
    subprocess.run([CC, "-O1", "-Wall", "-o", exe, os.path.join(d, "driver.c"), "-I", d,
                    os.path.join(d, f"lib{ep.name}.a"), "-lm"], check=True, capture_output=True, text=True)
    return exe


def run_driver(exe, directory, arrays, batch, *mode):
    d = str(directory)
    for i, a in enumerate(arrays):
        np.ascontiguousarray(a).tofile(os.path.join(d, f"in{i}.bin"))
    r = subprocess.run([exe, mode[0], d, str(batch), *mode[1:]], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_outputs(ep, directory, batch):
    return [np.fromfile(os.path.join(str(directory), f"out{j}.bin"), t.dtype.np).reshape(t.eval_shape(batch))
            for j, t in enumerate(ep.outputs)]


def make_loss_and_grads():
    tg.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    params = list(model.parameters())

    def loss_and_grads(x, y):
        per_sample = (model(x).sigmoid() - y).square().mean(dim=1)
        loss = per_sample.mean()
        return (loss, *tg.autograd.grad(loss, params), per_sample)
    return loss_and_grads, lambda b: (tg.randn(b, 6), tg.rand(b, 3))


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

    def data(b):
        return tg.randn(b, 5), tg.tensor(np.arange(b) % 3)
    train_step(*data(10))  # one eager step first: .grad tensors exist, zero_grad sets them to None
    return train_step, data


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = {}
    for make in (make_loss_and_grads, make_train_step):
        fn, data = make()
        ep = tg.export(fn, *data(8), dynamic=True)
        d = tmp_path_factory.mktemp(ep.name)
        out[ep.name] = (fn, data, ep, d, build(ep, d))
    return out


def test_signature_writes_the_batch_dim_as_B(built):
    _, _, ep, _, _ = built["loss_and_grads"]
    sig = ep.signature
    assert sig["inputs"][:2] == [("x", ("B", 6), "float32"), ("y", ("B", 3), "float32")]
    assert sig["inputs"][2] == ("model.0.weight", (16, 6), "float32")  # lifted: static
    assert sig["outputs"][0] == ("result[0]", (), "float32")
    assert ep.batch_input == (0, 0) and "x: float32[B, 6]" in str(ep)


def test_loss_and_grads_match_eager_at_every_batch_size(built):
    fn, data, ep, d, exe = built["loss_and_grads"]
    for b in BATCHES:
        x, y = data(b)
        inputs = [x.numpy(), y.numpy()] + ep.example_inputs()[2:]
        run_driver(exe, d, inputs, b, "run")
        assert_close(read_outputs(ep, d, b), [r.detach().numpy() for r in fn(x, y)])


def test_train_step_matches_eager_at_every_batch_size(built):
    fn, data, ep, d, exe = built["train_step"]
    assert [t.role for t in ep.outputs][0] == "result" and {t.role for t in ep.outputs[1:]} == {"updated"}
    for b in BATCHES:
        x, y = data(b)
        inputs = [x.numpy(), y.numpy()] + ep.example_inputs()[2:]
        loss = fn(x, y)  # eager: updates the model in place
        run_driver(exe, d, inputs, b, "run")
        assert_close(read_outputs(ep, d, b), [loss.detach().numpy()] + ep.updated_values())
    # three steps in C with the parameters updated in place vs three eager steps
    x, y = data(7)
    inputs = [x.numpy(), y.numpy()] + ep.example_inputs()[2:]
    losses = [fn(x, y) for _ in range(3)]
    run_driver(exe, d, inputs, 7, "steps", "3")
    assert_close(read_outputs(ep, d, 7), [losses[-1].detach().numpy()] + ep.updated_values())


def test_wrong_shapes_are_rejected_before_writing(built):
    fn, data, ep, d, exe = built["loss_and_grads"]
    x, y = data(7)
    out = run_driver(exe, d, [x.numpy(), y.numpy()] + ep.example_inputs()[2:], 7, "bad")
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in out.strip().splitlines()}
    assert lines["dim"].startswith("rc=1 untouched=1 ")
    assert "input 0 (x): expected shape [B=7: 7, 6], given [7, 5]" in lines["dim"]
    assert lines["inconsistent"].startswith("rc=1 untouched=1 ")
    assert "input 1 (y): expected shape [B=7: 7, 3], given [8, 3] (B from input 0 (x) dim 0)" in lines["inconsistent"]
    last = ep.outputs[-1]
    assert last.name == "result[5]" and last.sym_shape == ("B",)
    assert lines["output"].startswith("rc=1 untouched=1 ")
    assert "output 5 (result[5]): expected shape [B=7: 7], given [8] (B from input 0 (x) dim 0)" in lines["output"]
    assert lines["negative"].startswith("rc=1 untouched=1 ") and "is -2: expected B >= 0" in lines["negative"]
    assert lines["ok"].startswith("rc=0 ")


def test_wrong_output_shape_is_rejected(built):
    fn, data, ep, d, exe = built["train_step"]
    x, y = data(3)
    out = run_driver(exe, d, [x.numpy(), y.numpy()] + ep.example_inputs()[2:], 3, "bad")
    lines = {ln.split(" ", 1)[0]: ln.split(" ", 1)[1] for ln in out.strip().splitlines()}
    assert lines["inconsistent"].startswith("rc=1 untouched=1 ")
    assert "input 1 (y): expected shape [B=3: 3], given [4]" in lines["inconsistent"]
    assert lines["output"].startswith("rc=1 untouched=1 ")  # a static output: model.0.weight
    assert "output 1 (model.0.weight): expected shape [16, 5], given [17, 5]" in lines["output"]
    assert lines["ok"].startswith("rc=0 ")


def test_header_readme_and_example(built):
    fn, data, ep, d, _ = built["train_step"]
    header = open(os.path.join(str(d), "train_step.h")).read()
    assert "#define TRAIN_STEP_IN_X_SHAPE(B) { (B), 5 }" in header
    assert "#define TRAIN_STEP_IN_X_NUMEL(B) ((int64_t)(B) * (int64_t)5)" in header
    assert "#define TRAIN_STEP_IN_MODEL_0_WEIGHT_SHAPE { 16, 5 }" in header
    assert "#define TRAIN_STEP_BATCH_INPUT 0" in header and "TRAIN_STEP_WORKSPACE_BYTES(B)" in header
    readme = open(os.path.join(str(d), "README.md")).read()
    assert "[B, 5]" in readme and "const int64_t B = " in readme
    syms = subprocess.run(["nm", "-D", "--defined-only", os.path.join(str(d), "libtrain_step.so")],
                          capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in syms.splitlines() if " T " in line}
    assert exported == {"train_step", "train_step_last_error", "train_step_shape"}
    exe = os.path.join(str(d), "example")
    subprocess.run([CC, os.path.join(str(d), "example.c"), "-I", str(d), os.path.join(str(d), "libtrain_step.a"),
                    "-lm", "-o", exe], check=True, capture_output=True, text=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0 and "result[0] =" in r.stdout, r.stdout + r.stderr


def test_batch_dependent_functions_raise_compile_error():
    W = tg.ones(4, 2)
    with pytest.raises(CompileError, match="branch on the batch size"):
        tg.export(lambda x: (x @ W) * (2.0 if x.shape[0] > 100 else 3.0), tg.ones(4, 4), name="br", dynamic=True)
    with pytest.raises(CompileError, match="not linear in the batch size"):
        tg.export(lambda x: x[: x.shape[0] // 2].sum(), tg.ones(8, 4), name="half", dynamic=True)
    with pytest.raises(CompileError, match="no tensor argument"):
        tg.export(lambda x: x * 2, tg.ones(()), name="scalar", dynamic=True)


def test_driver_clean_under_asan(built, tmp_path):
    from test_export import _asan_works

    if not _asan_works(str(tmp_path)):
        pytest.skip("no AddressSanitizer")
    fn, data, ep, d, _ = built["loss_and_grads"]
    exe = os.path.join(str(d), "driver_asan")
    subprocess.run([CC, "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                    "-fno-omit-frame-pointer", "-o", exe, os.path.join(str(d), "driver.c"),
                    os.path.join(str(d), f"{ep.name}.c"), "-I", str(d), "-lm"], check=True, capture_output=True, text=True)
    for b, mode in ((1, "run"), (100, "run"), (0, "run"), (5, "bad")):
        x, y = data(b)
        run_driver(exe, d, [x.numpy(), y.numpy()] + ep.example_inputs()[2:], b, mode)


# ----------------------------------------------------------------------------- split=True
SPLIT_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "loss.h"
static void io(const char *dir, const char *tag, int j, void *buf, size_t n, int write) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s%d.bin", dir, tag, j);
  FILE *f = fopen(path, write ? "wb" : "rb");
  if (!f || (n && (write ? fwrite(buf, 1, n, f) : fread(buf, 1, n, f)) != n)) { fprintf(stderr, "io %s\n", path); exit(3); }
  fclose(f);
}
/* every tensor is float32 here; shapes from the library's <entry>_shape */
static void setup(tg_tensor *t, int n, int output, int64_t B, int64_t (*shape)[8], size_t *bytes,
                  int32_t (*shape_fn)(int32_t, int32_t, int64_t, int64_t *)) {
  for (int i = 0; i < n; i++) {
    t[i].ndim = shape_fn(output, i, B, shape[i]);
    t[i].dtype = TG_FLOAT32;
    t[i].shape = shape[i];
    bytes[i] = 4;
    for (int d = 0; d < t[i].ndim; d++) bytes[i] *= (size_t)shape[i][d];
    t[i].data = calloc(bytes[i] + 8, 1);
  }
}
int main(int argc, char **argv) {
  const char *dir = argv[2];
  const int64_t B = atoll(argv[3]);
  tg_tensor fi[LOSS_FORWARD_N_INPUTS], fo[LOSS_FORWARD_N_OUTPUTS], bi[LOSS_BACKWARD_N_INPUTS], bo[LOSS_BACKWARD_N_OUTPUTS];
  int64_t fis[LOSS_FORWARD_N_INPUTS][8], fos[LOSS_FORWARD_N_OUTPUTS][8], bis[LOSS_BACKWARD_N_INPUTS][8], bos[LOSS_BACKWARD_N_OUTPUTS][8];
  size_t fib[LOSS_FORWARD_N_INPUTS], fob[LOSS_FORWARD_N_OUTPUTS], bib[LOSS_BACKWARD_N_INPUTS], bob[LOSS_BACKWARD_N_OUTPUTS];
  setup(fi, LOSS_FORWARD_N_INPUTS, 0, B, fis, fib, loss_forward_shape);
  setup(fo, LOSS_FORWARD_N_OUTPUTS, 1, B, fos, fob, loss_forward_shape);
  setup(bi, LOSS_BACKWARD_N_INPUTS, 0, B, bis, bib, loss_backward_shape);
  setup(bo, LOSS_BACKWARD_N_OUTPUTS, 1, B, bos, bob, loss_backward_shape);
  const int n_saved = LOSS_FORWARD_N_OUTPUTS - 2;
  for (int i = 0; i < LOSS_FORWARD_N_INPUTS; i++) io(dir, "in", i, fi[i].data, fib[i], 0);
  for (int j = 0; j < n_saved; j++) { free(bi[j].data); bi[j].data = fo[2 + j].data; }
  for (int k = n_saved; k < LOSS_BACKWARD_N_INPUTS; k++) io(dir, "g", k - n_saved, bi[k].data, bib[k], 0);
  if (!strcmp(argv[1], "bad")) {  /* a saved tensor of another batch size */
    bis[0][0] += 1;
    int rc = loss_backward(bi, LOSS_BACKWARD_N_INPUTS, bo, LOSS_BACKWARD_N_OUTPUTS);
    printf("backward rc=%d msg=%s\n", rc, loss_backward_last_error());
    return 0;
  }
  if (loss_forward(fi, LOSS_FORWARD_N_INPUTS, fo, LOSS_FORWARD_N_OUTPUTS)) { printf("%s\n", loss_forward_last_error()); return 1; }
  if (loss_backward(bi, LOSS_BACKWARD_N_INPUTS, bo, LOSS_BACKWARD_N_OUTPUTS)) { printf("%s\n", loss_backward_last_error()); return 1; }
  for (int j = 0; j < 2; j++) io(dir, "f", j, fo[j].data, fob[j], 1);
  for (int j = 0; j < LOSS_BACKWARD_N_OUTPUTS; j++) io(dir, "b", j, bo[j].data, bob[j], 1);
  return 0;
}
"""


def test_split_dynamic_forward_then_backward_matches_eager(tmp_path):
    tg.manual_seed(3)
    W = tg.randn(5, 3, requires_grad=True)
    b = tg.randn(3, requires_grad=True)

    def loss(x, y):
        h = x @ W + b - y
        return (h ** 2).mean(), h.tanh().sum(dim=0)

    sp = tg.export(loss, tg.randn(8, 5, requires_grad=True), tg.randn(8, 3), split=True, dynamic=True)
    assert sp.signature["backward"]["outputs"][0] == ("grad x", ("B", 5), "float32")
    d = str(tmp_path)
    sp.save(d)
    subprocess.run(["make", "-s", "-C", d], check=True, capture_output=True, text=True)
    with open(os.path.join(d, "driver.c"), "w") as f:
        f.write(SPLIT_DRIVER)
    exe = os.path.join(d, "driver")
    subprocess.run([CC, "-O1", "-Wall", "-o", exe, os.path.join(d, "driver.c"), "-I", d,
                    os.path.join(d, "libloss.a"), "-lm"], check=True, capture_output=True, text=True)
    g0, g1 = np.float32(0.7), np.array([0.5, -1.0, 2.0], np.float32)
    for k, g in enumerate((g0, g1)):
        np.asarray(g).tofile(os.path.join(d, f"g{k}.bin"))
    for bs in (1, 3, 100):
        x, y = tg.randn(bs, 5, requires_grad=True), tg.randn(bs, 3)
        run_driver(exe, d, [x.detach().numpy(), y.numpy(), W.detach().numpy(), b.detach().numpy()], bs, "run")
        fouts = [np.fromfile(os.path.join(d, f"f{j}.bin"), np.float32) for j in range(2)]
        bouts = [np.fromfile(os.path.join(d, f"b{j}.bin"), np.float32).reshape(t.eval_shape(bs))
                 for j, t in enumerate(sp.backward.outputs)]
        for t in (W, b):
            t.grad = None
        lo, s = loss(x, y)
        assert_close([f.reshape(np.shape(r.numpy())) for f, r in zip(fouts, (lo.detach(), s.detach()))],
                     [lo.detach().numpy(), s.detach().numpy()])
        tg.autograd.backward([lo, s], [tg.tensor(g0), tg.tensor(g1)])
        assert_close(bouts, [x.grad.numpy(), W.grad.numpy(), b.grad.numpy()])
    out = run_driver(exe, d, [x.detach().numpy(), y.numpy(), W.detach().numpy(), b.detach().numpy()], 100, "bad")
    # B comes from saved[0] (101 here): saved[2], [5, B], is then the inconsistent one
    assert ("backward rc=1 msg=loss_backward: input 2 (saved[2]): expected shape [B=101: 5, 101], given [5, 100] "
            "(B from input 0 (saved[0]) dim 0)") in out


def test_cli_export_dynamic_and_split(tmp_path):
    from tracegrad.tools import cli

    src = tmp_path / "fns.py"
    src.write_text("import tracegrad as tg\nW = tg.ones(3, 2, requires_grad=True)\n"
                   "def affine(x):\n    return (x @ W).relu().sum()\n")
    out = tmp_path / "lib"
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "--dynamic", "-o", str(out)]) == 0
    assert "#define AFFINE_IN_X_SHAPE(B) { (B), 3 }" in (out / "affine.h").read_text()
    out2 = tmp_path / "lib2"
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "--dynamic", "--split", "-o", str(out2)]) == 0
    assert "int affine_backward(const tg_tensor *inputs" in (out2 / "affine.h").read_text()


def test_batch_sized_constant_is_filled_per_call(tmp_path):
    """A constant whose shape follows B (here a filled [B, 2] block) is filled per call; the
    driver sizes everything with the header's <T>_SHAPE(B) / <T>_NUMEL(B) macros."""
    ep = tg.export(lambda x: tg.cat([x, tg.full((x.shape[0], 2), 1.5)], dim=1).exp(), tg.ones(4, 3),
                   name="catf", dynamic=True)
    assert [(k, dims) for k, dims, _ in ep.filled] == [(0, [(1, 0), (0, 2)])]
    d = str(tmp_path)
    ep.save(d)
    subprocess.run(["make", "-s", "-C", d, "libcatf.a"], check=True, capture_output=True, text=True)
    with open(os.path.join(d, "drv.c"), "w") as f:
        f.write(r"""
#include <stdio.h>
#include <stdlib.h>
#include "catf.h"
int main(void) {
  for (int64_t B = 0; B < 70; B += 23) {
    int64_t xs[] = CATF_IN_X_SHAPE(B), os[] = CATF_OUT_RESULT_SHAPE(B);
    float *x = calloc(CATF_IN_X_NUMEL(B) + 1, 4), *o = calloc(CATF_OUT_RESULT_NUMEL(B) + 1, 4);
    for (int64_t k = 0; k < CATF_IN_X_NUMEL(B); k++) x[k] = (float)(k % 7) * 0.1f;
    tg_tensor i[] = {{x, TG_FLOAT32, 2, xs}}, out[] = {{o, TG_FLOAT32, 2, os}};
    if (catf(i, 1, out, 1)) { printf("%s\n", catf_last_error()); return 1; }
    fwrite(o, 4, (size_t)CATF_OUT_RESULT_NUMEL(B), stdout);
    free(x); free(o);
  }
  return 0;
}
""")
    exe = os.path.join(d, "drv")
    subprocess.run([CC, "-o", exe, os.path.join(d, "drv.c"), "-I", d, os.path.join(d, "libcatf.a"), "-lm"],
                   check=True, capture_output=True, text=True)
    got = np.frombuffer(subprocess.run([exe], capture_output=True, check=True).stdout, np.float32)
    want = []
    for b in range(0, 70, 23):
        x = (np.arange(b * 3) % 7 * np.float32(0.1)).astype(np.float32).reshape(b, 3)
        want.append(np.exp(np.concatenate([x, np.full((b, 2), 1.5, np.float32)], 1)).ravel())
    np.testing.assert_allclose(got, np.concatenate(want), rtol=1e-6)
