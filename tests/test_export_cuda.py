"""tg.export(..., backend="cuda"): a .cu library on device pointers, built and run here.

Without a GPU the libraries are built with `make EMULATE=1` (g++ and the emulation header the
export ships) and driven by a C++ host program written here that does what a CUDA program does:
host buffers, cudaMalloc'd device copies, the call, cudaMemcpy back. A forward pass, a gradient
(tg.func.grad) with its loss, an SGD training step with parameters updated in place (outputs
aliasing inputs) and a split forward/backward are compared with eager tracegrad; wrong sizes and
counts return 1 with the C library's messages and write nothing; the generated sources compile
with `nvcc -arch=sm_90 -c` when nvcc is present; the CLI takes `--backend cuda`.
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn
from tracegrad.compiler import CompileError

CXX = os.environ.get("CXX", "g++")
pytestmark = pytest.mark.skipif(shutil.which(CXX) is None or shutil.which("make") is None,
                                reason="needs a C++ compiler and make")
EMULATE = ["-std=c++17", "-DTG_CUDA_EMULATE", "-pthread"]


def driver_source(ep):
    """A C++ host program for ``ep``. ``run DIR``: in<i>.bin -> device -> call -> out<j>.bin;
    ``steps DIR K``: K calls with every updated output passed as its own input's device buffer;
    ``bad DIR``: wrong shapes and counts, printing each return code and message, then whether
    the outputs were left untouched."""
    ins, outs = ep.inputs, ep.outputs
    in_pos = {t.name: t.index for t in ins}
    alias = [in_pos.get(t.name, -1) if t.role == "updated" else -1 for t in outs]

    def table(specs, tag):
        rows = [f"static int64_t {tag}_shape{t.index}[] = {{{', '.join(map(str, t.shape)) or '0'}}};" for t in specs]
        rows.append(f"static int64_t *{tag}_shape[] = {{{', '.join(f'{tag}_shape{t.index}' for t in specs)}}};")
        for field, values in (("dt", [t.enum for t in specs]), ("nd", [len(t.shape) for t in specs]),
                              ("bytes", [t.nbytes for t in specs])):
            rows.append(f"static const long {tag}_{field}[] = {{{', '.join(map(str, values))}}};")
        return "\n".join(rows)

    return f"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <vector>
#ifdef TG_CUDA_EMULATE
#include "tg_cuda_emulate.h"
#else
#include <cuda_runtime.h>
#endif
#include "{ep.name}.h"
#define NI {len(ins)}
#define NO {len(outs)}
#define CK(call) do {{ if ((call) != cudaSuccess) {{ fprintf(stderr, "CUDA error: %s\\n", #call); exit(4); }} }} while (0)
{table(ins, "in")}
{table(outs, "out")}
static const int alias[] = {{{', '.join(map(str, alias))}}};

static int call(void **ins, void **outs, int n_in) {{
  tg_tensor ti[NI + 1], to[NO];
  for (int i = 0; i < NI; i++) ti[i] = tg_tensor{{ins[i], (int32_t)in_dt[i], (int32_t)in_nd[i], in_shape[i]}};
  ti[NI] = ti[0];
  for (int j = 0; j < NO; j++) to[j] = tg_tensor{{outs[j], (int32_t)out_dt[j], (int32_t)out_nd[j], out_shape[j]}};
  return {ep.name}(ti, n_in, to, NO);
}}

int main(int argc, char **argv) {{
  const std::string mode = argv[1], dir = argv[2];
  void *din[NI + 1], *dout[NO];
  for (int i = 0; i < NI; i++) {{
    std::vector<char> host(in_bytes[i]);
    FILE *f = fopen((dir + "/in" + std::to_string(i) + ".bin").c_str(), "rb");
    if (!f || fread(host.data(), 1, host.size(), f) != host.size()) {{ fprintf(stderr, "read in%d\\n", i); return 3; }}
    fclose(f);
    CK(cudaMalloc(&din[i], in_bytes[i] + 8));
    CK(cudaMemcpy(din[i], host.data(), in_bytes[i], cudaMemcpyHostToDevice));
  }}
  for (int j = 0; j < NO; j++) {{
    CK(cudaMalloc(&dout[j], out_bytes[j] + 8));
    CK(cudaMemset(dout[j], 0x7f, out_bytes[j] + 8));
  }}
  if (mode == "bad") {{
    for (int i = 0; i < NI; i++) {{
      if (in_nd[i] == 0) continue;
      const int64_t keep = in_shape[i][0];
      in_shape[i][0] = keep + 1;
      const int rc = call(din, dout, NI);
      in_shape[i][0] = keep;
      printf("shape%d rc=%d %s\\n", i, rc, {ep.name}_last_error());
    }}
    const int rc = call(din, dout, NI + 1);
    printf("count rc=%d %s\\n", rc, {ep.name}_last_error());
    int untouched = 1;
    for (int j = 0; j < NO; j++) {{
      std::vector<unsigned char> host(out_bytes[j]);
      CK(cudaMemcpy(host.data(), dout[j], out_bytes[j], cudaMemcpyDeviceToHost));
      for (unsigned char c : host) untouched &= c == 0x7f;
    }}
    printf("untouched=%d\\n", untouched);
    return 0;
  }}
  const int steps = mode == "steps" ? atoi(argv[3]) : 1;
  void *targets[NO];
  for (int j = 0; j < NO; j++) targets[j] = mode == "steps" && alias[j] >= 0 ? din[alias[j]] : dout[j];
  for (int s = 0; s < steps; s++)
    if (call(din, targets, NI) != 0) {{ fprintf(stderr, "%s\\n", {ep.name}_last_error()); return 5; }}
  for (int j = 0; j < NO; j++) {{
    std::vector<char> host(out_bytes[j]);
    CK(cudaMemcpy(host.data(), targets[j], out_bytes[j], cudaMemcpyDeviceToHost));
    FILE *f = fopen((dir + "/out" + std::to_string(j) + ".bin").c_str(), "wb");
    fwrite(host.data(), 1, host.size(), f);
    fclose(f);
  }}
  for (int i = 0; i < NI; i++) cudaFree(din[i]);
  for (int j = 0; j < NO; j++) cudaFree(dout[j]);
  return 0;
}}
"""


def build(ep, directory, driver=True):
    """Save, `make EMULATE=1`, and link a host program; returns the program's path."""
    d = str(directory)
    ep.save(d)
    subprocess.run(["make", "-s", "-C", d, "EMULATE=1"], check=True, capture_output=True, text=True)
    if not driver:
        return None
    with open(os.path.join(d, "driver.cu"), "w") as f:
        f.write(driver_source(ep))
    exe = os.path.join(d, "driver")
    subprocess.run([CXX, *EMULATE, "-O1", "-I", d, "-x", "c++", os.path.join(d, "driver.cu"), "-x", "none",
                    os.path.join(d, f"lib{ep.name}.a"), "-lm", "-o", exe], check=True, capture_output=True, text=True)
    return exe


def run_driver(exe, directory, arrays, *mode):
    d = str(directory)
    for i, a in enumerate(arrays):
        np.ascontiguousarray(a).tofile(os.path.join(d, f"in{i}.bin"))
    r = subprocess.run([exe, mode[0], d, *mode[1:]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def read_outputs(ep, directory):
    return [np.fromfile(os.path.join(str(directory), f"out{j}.bin"), t.dtype.np).reshape(t.shape)
            for j, t in enumerate(ep.outputs)]


def assert_close(got, want, rtol=1e-4, atol=1e-5):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol, err_msg=f"output {k}")


def nvcc_compiles(directory, *files):
    """Compile each file of ``directory`` with nvcc -arch=sm_90 -c (the test skips without nvcc)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    for f in files:
        r = subprocess.run(["nvcc", "-arch=sm_90", "-c", "-I", str(directory), os.path.join(str(directory), f),
                            "-o", os.path.join(str(directory), f + ".sm90.o")], capture_output=True, text=True)
        assert r.returncode == 0, f"{f}:\n{r.stderr[-3000:]}"


# ----------------------------------------------------------------------------- the functions
def make_forward():
    tg.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 4))

    def forward(x):
        return tg.softmax(model(x), dim=1), model(x).amax(dim=0)
    return forward, (tg.randn(10, 6),)


def make_grad():
    tg.manual_seed(2)

    def loss(W, x, y):
        return ((x @ W).sigmoid() - y).square().mean()
    grad_and_value = tg.func.grad_and_value(loss)

    def loss_grad(W, x, y):
        g, value = grad_and_value(W, x, y)
        return value, g
    return loss_grad, (tg.randn(6, 3), tg.randn(8, 6), tg.rand(8, 3))


def make_train_step():
    tg.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train_step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    x, y = tg.randn(12, 5), tg.randn(12, 3)
    train_step(x, y)  # one eager step first: the momentum buffers exist (inputs and outputs)
    return train_step, (x, y)


def make_adam_step():
    tg.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)

    def adam_step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    x, y = tg.randn(6, 4), tg.randn(6, 2)
    adam_step(x, y)  # the moments and the step count exist: inputs and outputs
    return adam_step, (x, y)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = {}
    for make in (make_forward, make_grad, make_train_step, make_adam_step):
        fn, args = make()
        ep = tg.export(fn, *args, backend="cuda")
        d = tmp_path_factory.mktemp(ep.name)
        out[ep.name] = (fn, args, ep, d, build(ep, d))
    return out


def test_forward_matches_eager(built):
    fn, args, ep, d, exe = built["forward"]
    assert "CUDA ABI: device pointers" in str(ep)
    run_driver(exe, d, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, d), [r.detach().numpy() for r in fn(*args)])


def test_gradient_matches_eager(built):
    fn, args, ep, d, exe = built["loss_grad"]
    assert [n for n, _, _ in ep.signature["outputs"]] == ["result[0]", "result[1]"]
    run_driver(exe, d, ep.example_inputs(), "run")
    assert_close(read_outputs(ep, d), [r.detach().numpy() for r in fn(*args)])


@pytest.mark.parametrize("step", ["train_step", "adam_step"])
def test_train_step_updates_device_buffers_in_place(built, step):
    fn, args, ep, d, exe = built[step]
    assert sum(t.role == "updated" and t.name.startswith("opt.state") for t in ep.outputs) >= 4
    inputs = ep.example_inputs()
    losses = [fn(*args) for _ in range(3)]  # eager, three steps
    # the parameters and momentum buffers are passed as their own outputs: staged in the device
    # workspace and copied over them (device to device) after each call
    run_driver(exe, d, inputs, "steps", "3")
    assert_close(read_outputs(ep, d), [losses[-1].detach().numpy()] + ep.updated_values())


def test_wrong_sizes_return_1_with_the_c_librarys_messages(built):
    fn, args, ep, d, exe = built["loss_grad"]
    out = run_driver(exe, d, ep.example_inputs(), "bad")
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)
    assert lines["shape0"] == "rc=1 loss_grad: input 0 (W): expected shape [6, 3], given [7, 3]"
    assert lines["shape1"] == "rc=1 loss_grad: input 1 (x): expected shape [8, 6], given [9, 6]"
    assert lines["count"] == ("rc=1 loss_grad: expected 3 inputs and 2 outputs, given 4 inputs and "
                              "2 outputs")
    assert "untouched=1" in out


def test_example_program_runs_and_prints_eager_values(built):
    """example.cu (the README's program) with the emulation: inputs filled with 0.01 * (i % 17)."""
    fn, args, ep, d, _ = built["forward"]
    exe = os.path.join(str(d), "example")
    subprocess.run([CXX, *EMULATE, "-I", str(d), "-x", "c++", os.path.join(str(d), "example.cu"), "-x", "none",
                    os.path.join(str(d), "libforward.a"), "-lm", "-o", exe], check=True, capture_output=True)
    printed = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    x = tg.tensor((0.01 * (np.arange(60) % 17)).reshape(10, 6).astype(np.float32))
    model = [t.source for t in ep.inputs[1:]]
    for source in model:  # the example fills the parameters the same way
        a = source()
        a[...] = (0.01 * (np.arange(a.size) % 17)).reshape(a.shape)
    want = [r.detach().numpy().reshape(-1)[0] for r in fn(x)]
    got = [float(m) for m in re.findall(r"\[0\] = (\S+)", printed)]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_library_files_and_readme(built):
    fn, args, ep, d, exe = built["train_step"]
    names = set(os.listdir(str(d)))
    assert {"train_step.h", "train_step.cu", "Makefile", "CMakeLists.txt", "README.md", "example.cu",
            "tg_cuda_emulate.h", "libtrain_step.so", "libtrain_step.a"} <= names
    readme = (d / "README.md").read_text()
    for needed in ("device pointer", "cudaMalloc", "cudaMemcpy", "cudaMemcpyDeviceToHost", "make EMULATE=1",
                   "train_step_last_error()", "| input | 0 | `x` | float32 | [12, 5] | argument |"):
        assert needed in readme, needed
    header = (d / "train_step.h").read_text()
    assert "int train_step(const tg_tensor *inputs" in header and "TRAIN_STEP_IN_X_SHAPE { 12, 5 }" in header


def test_sources_compile_with_nvcc(built):
    fn, args, ep, d, exe = built["train_step"]
    nvcc_compiles(d, "train_step.cu", "example.cu")


def test_split_forward_then_backward(tmp_path):
    tg.manual_seed(4)
    W, b = tg.randn(5, 3, requires_grad=True), tg.randn(3, requires_grad=True)

    def loss(x, y):
        return ((x @ W + b).tanh() - y).square().mean()
    x, y = tg.randn(8, 5), tg.randn(8, 3)
    sp = tg.export(loss, x, y, split=True, backend="cuda")
    assert {"loss_forward.cu", "loss_backward.cu", "example.cu"} <= set(sp.files())
    build(sp, tmp_path, driver=False)
    exe = str(tmp_path / "example")
    subprocess.run([CXX, *EMULATE, "-I", str(tmp_path), "-x", "c++", str(tmp_path / "example.cu"), "-x", "none",
                    str(tmp_path / "libloss.a"), "-lm", "-o", exe], check=True, capture_output=True)
    printed = dict(line.split(" = ") for line in subprocess.run([exe], check=True, capture_output=True,
                                                                text=True).stdout.strip().splitlines())
    # example.cu fills every float input with 0.01 * (i % 17) and the incoming gradient with 1
    fill = lambda t: tg.tensor((0.01 * (np.arange(t.numel()) % 17)).reshape(t.shape).astype(np.float32))
    Wf, bf = fill(W).requires_grad_(), fill(b).requires_grad_()
    value = ((fill(x) @ Wf + bf).tanh() - fill(y)).square().mean()
    gW, gb = tg.autograd.grad(value, [Wf, bf])
    np.testing.assert_allclose([float(printed["result[0]"]), float(printed["grad W[0]"]), float(printed["grad b[0]"])],
                               [value.item(), gW.numpy()[0, 0], gb.numpy()[0]], rtol=1e-4)


def test_step_of_tensors_on_the_device(tmp_path, monkeypatch):
    """A model and batch on cuda tensors (emulated): the export reads their device memory for
    example_inputs and updated_values, and the library's steps equal eager steps on the device."""
    from tracegrad.compiler.backends import cuda

    monkeypatch.setenv(cuda.EMULATE_ENV, "1")
    tg.manual_seed(6)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3)).cuda()
    opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def device_step(x, y):
        opt.zero_grad()
        weights = tg.tensor([1.0, 2.0, 0.5], device="cuda")  # a constant made on the device
        loss = (((model(x) - y) ** 2) * weights).mean()
        loss.backward()
        opt.step()
        return loss
    x, y = tg.randn(4, 5, device="cuda"), tg.randn(4, 3, device="cuda")
    device_step(x, y)
    ep = tg.export(device_step, x, y, backend="cuda")
    exe = build(ep, tmp_path)
    inputs = ep.example_inputs()
    assert all(isinstance(a, np.ndarray) for a in inputs)
    losses = [device_step(x, y) for _ in range(3)]
    run_driver(exe, tmp_path, inputs, "steps", "3")
    assert_close(read_outputs(ep, tmp_path), [losses[-1].cpu().detach().numpy()] + ep.updated_values())


# ----------------------------------------------------------------------------- refusals
def test_refusals_name_what_is_wrong():
    with pytest.raises(ValueError, match="backend must be one of 'c', 'cuda', got 'metal'"):
        tg.export(lambda x: x + 1, tg.ones(3), name="f", backend="metal")
    with pytest.raises(NotImplementedError, match="no runtime batch size yet.*backend='c'"):
        tg.export(lambda x: x + 1, tg.ones(3, 2), name="f", backend="cuda", dynamic=True)
    with pytest.raises(CompileError, match="CUDA backend cannot compile running: no CUDA lowering for op 'cumsum'.*"
                                           "no interpreter to fall back to"):
        tg.export(lambda x: x.cumsum(1), tg.randn(4, 3), name="running", backend="cuda")
    labels = tg.tensor(np.arange(4) % 3)
    with pytest.raises(CompileError, match="xent reads indices .* does not report yet; backend='c' exports it"):
        tg.export(lambda x: nn.functional.cross_entropy(x, labels), tg.randn(4, 3), name="xent", backend="cuda")
    for bad in ("cudaMalloc", "float4", "std", "rsqrtf", "nvtxMark"):
        with pytest.raises(ValueError, match="CUDA runtime"):
            tg.export(lambda x: x + 1, tg.ones(3), name=bad, backend="cuda")
    with pytest.raises(ValueError, match="C or C\\+\\+ keyword"):  # the C export's own rule applies too
        tg.export(lambda x: x + 1, tg.ones(3), name="template", backend="cuda")


def test_cli_backend_cuda(tmp_path, capsys):
    from tracegrad.tools import cli

    src = tmp_path / "fns.py"
    src.write_text("def affine(x, scale):\n    return (x * scale + 1).relu()\n")
    out = tmp_path / "lib"
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "--arg", "scale=2.0", "--backend", "cuda",
                     "-o", str(out)]) == 0
    assert {"affine.cu", "affine.h", "example.cu", "tg_cuda_emulate.h"} <= set(os.listdir(out))
    assert "EMULATE=1" in capsys.readouterr().out
    assert cli.main(["export", f"{src}:affine", "--arg", "x=f32[4,3]", "--arg", "scale=2.0", "--backend", "tpu",
                     "-o", str(tmp_path / "other")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tracegrad: error: export:") and "'tpu'" in err
