"""tracegrad ``backend="c"`` against its peers on the workloads of ../shared/BENCHMARKS.md (and
``cnn``, a small convolutional net of our own: workloads.make_cnn; ``transformer``, one block's
training step of issue 26: workloads.make_transformer; ``gpt``, a GPT-style step:
workloads.make_gpt; ``lenet5``: workloads.make_lenet5; these three run only when named), side by side in one process, with ratios (the machines are shared and noisy: ratios measured
together mean more than absolute times).

    python benchmarks/bench_workloads.py [--workloads tiny,custom,chain,medium,cnn,transformer,gpt,lenet5,compile,overhead]
                                         [--steps 50] [--rounds 5] [--no-torch-compile]

Timing: the contenders of a workload take turns, ``--rounds`` rounds of ``--steps`` steps each
(the order rotating from round to round), so that a slow spell of the shared machine falls on
all of them rather than on whichever ran then; each time is the median of all its steps after
warm-up. ``compile``: first call of ``tiny`` with an
empty cache (a fresh cache directory), then in a new process with that warm cache.
``overhead``: the per-call cost of Python around a compiled ``tiny`` step (built whole, not
batch-split: see overhead()): the median step time
minus the median time of its native call alone (the same program, called in the same process,
alternating blocks of calls); and, apart, the step with its native call replaced by a no-op
(Python's own work, without the cache misses the native call leaves behind for it). Peers are
measured only when installed (PyTorch eager, torch.compile, JAX jit: ``jax_workloads.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

try:
    import torch
except ImportError:
    torch = None
try:
    import jax
except ImportError:
    jax = None


def step_times(fn, steps):
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def interleaved_medians(contenders, steps, rounds, warmup=3, pause=0.05):
    """{name: median step time} for ``{name: fn}``, the contenders taking turns: ``rounds``
    rounds of ``steps`` steps each, the order rotated every round. Before each turn, a pause
    of ``pause`` seconds lets the previous contender's worker threads (OpenBLAS, OpenMP, XLA
    spin a while after their work) go idle, so that they do not slow the next one down."""
    for fn in contenders.values():
        step_times(fn, warmup)
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(pause)
            step_times(contenders[name], 1)  # (its caches warm again after the other's turn)
            times[name] += step_times(contenders[name], steps)
    return {name: statistics.median(ts) for name, ts in times.items()}


# ----------------------------------------------------------------------------- torch versions
def torch_step(name, compiled=False, device="cpu"):
    """PyTorch's version of workload ``name`` as a no-argument step, its model, optimizer state
    and data on ``device`` (``torch.compile``d when ``compiled``)."""
    with torch.device(device):  # (factories and modules made inside land on the device)
        step = _torch_step(name, device)
    return torch.compile(step) if compiled else step


def _torch_step(name, device):
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "chain":
        n = 1 << 22
        x, a, b = (torch.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True) for _ in range(3))

        def step():
            loss = (F.gelu(x * a + b, approximate="tanh") * torch.sigmoid(x)).sum()
            return torch.autograd.grad(loss, [x, a, b])
    elif name == "transformer":
        import workloads

        torch.manual_seed(0)
        model = workloads.transformer_block(torch)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        xd, yd = (torch.from_numpy(a).to(device) for a in workloads.transformer_data())

        def step():
            opt.zero_grad()
            loss = F.mse_loss(model(xd), yd)
            loss.backward()
            opt.step()
            return loss
    elif name == "gpt":
        import workloads

        sz = workloads.GPT_SIZES
        torch.manual_seed(0)
        model = workloads.gpt(torch, sz["vocab"], sz["n_embd"], sz["n_head"], sz["n_layer"], sz["block_size"])
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
        idx, targets = (torch.from_numpy(a).to(device) for a in workloads.gpt_data(sz["batch"], sz["block_size"], sz["vocab"]))

        def step():
            opt.zero_grad()
            loss = model(idx, targets)
            loss.backward()
            opt.step()
            return loss
    elif name == "lenet5":
        import workloads

        torch.manual_seed(0)
        model = workloads.lenet5(torch)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        xd, yd = (torch.from_numpy(a).to(device) for a in workloads.lenet5_data())

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(xd), yd)
            loss.backward()
            opt.step()
            return loss
    else:
        batch, sample = {"tiny": (32, (64,)), "custom": (32, (64,)), "medium": (256, (784,)),
                         "cnn": (64, (1, 28, 28))}[name]
        xd = torch.tensor(rng.standard_normal((batch,) + sample).astype(np.float32))
        yd = torch.tensor(rng.integers(0, 10, size=batch).astype(np.int64))
        if name == "tiny":
            model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
        elif name == "medium":
            model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        elif name == "cnn":
            model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
        else:
            fc1, fc2 = nn.Linear(64, 128), nn.Linear(128, 10)
            scale = nn.Parameter(torch.ones(128))

            class Func(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, y, z):
                    w = x * z
                    out = x * y + y * z + w * y
                    ctx.save_for_backward(x, y, w, out)
                    ctx.z = z
                    return out

                @staticmethod
                def backward(ctx, g):
                    x, y, w, out = ctx.saved_tensors
                    return g * (y + y * ctx.z), g * (x + ctx.z + w), None

            def model(v):
                return fc2(Func.apply(fc1(v).tanh(), scale, 0.5))

            opt = torch.optim.SGD(list(fc1.parameters()) + [scale] + list(fc2.parameters()), lr=0.05)

        def inner():
            opt.zero_grad()
            loss = F.cross_entropy(model(xd), yd)
            loss.backward()
            opt.step()
            return loss

        step = inner
    return step


def tg_step(name):
    import workloads

    step, args = workloads.WORKLOADS[name]("c")
    return lambda: step(*args), step


# ----------------------------------------------------------------------------- per-call overhead
def overhead(calls=2000, rounds=7):
    """(step, native, step - native, step with a no-op native call) in seconds for the compiled
    tiny step: medians over ``rounds`` blocks of ``calls`` calls, step and native blocks
    alternating, then the no-op blocks."""
    from tracegrad.compiler.backends.c import _ffi_instance

    import workloads

    # unsplit (options batch_split False): a split step's native call alone would write fresh
    # buffers instead of the parameters both cores read, skipping the cross-core cache traffic
    # the step itself pays, and "step - native" would count that traffic as Python's
    step, args = workloads.make_tiny("c", options={"batch_split": False})
    step(*args)
    step(*args)
    exe = step.programs[0].executable
    ffi = _ffi_instance()
    # the native call on its own pointer array: inputs as the last step bound them, outputs
    # into buffers kept alive here (the program's own slots may point at freed results)
    ptrs = ffi.new("void *[]", len(exe._ptrs))
    for k in range(len(exe._ptrs)):
        ptrs[k] = exe._ptrs[k]
    keep = [np.empty(s, d) for s, d in exe._outs]
    for k, o in enumerate(keep):
        ptrs[exe._out0 + k] = ffi.from_buffer(o)
    run, ws = exe._run, exe._ws

    def block(fn):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t) / calls

    steps, natives = [], []
    for _ in range(rounds):
        steps.append(block(lambda: step(*args)))
        natives.append(block(lambda: run(ptrs, ws)))
    t_step, t_native = statistics.median(steps), statistics.median(natives)
    del keep
    exe._run = lambda ptrs, ws: 0  # (the results are left as they are: only Python's work counts)
    t_python = statistics.median(block(lambda: step(*args)) for _ in range(rounds))
    return t_step, t_native, t_step - t_native, t_python


# ----------------------------------------------------------------------------- compile time
COMPILE_SCRIPT = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import workloads
step, args = workloads.make_tiny("c")
t = time.perf_counter(); step(*args); dt = time.perf_counter() - t
print(json.dumps({{"first_call": dt, "hit": step.programs[0].executable.cache_hit}}))
"""


def compile_times():
    d = tempfile.mkdtemp(prefix="tg-bench-cache-")
    env = dict(os.environ, TRACEGRAD_CACHE_DIR=d, PYTHONPATH=str(HERE.parent))
    out = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT.format(here=str(HERE))], env=env,
                           capture_output=True, text=True, check=True)
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default="tiny,custom,chain,medium,cnn,compile,overhead")
    ap.add_argument("--steps", type=int, default=50, help="steps per contender per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-torch-compile", action="store_true")
    args = ap.parse_args(argv)
    names = args.workloads.split(",")
    rows = []
    for name in names:
        if name == "overhead":
            t_step, t_native, t_py, t_python = overhead()
            rows.append(("overhead (tiny: step - native)", f"{t_py*1e6:.1f} us",
                         f"step {t_step*1e6:.1f} us", f"native {t_native*1e6:.1f} us",
                         f"python alone (native no-op) {t_python*1e6:.1f} us", ""))
            print(rows[-1], flush=True)
            continue
        if name == "compile":
            cold, warm = compile_times()
            rows.append(("compile (tiny first call)", f"cold {cold['first_call']*1e3:.0f} ms", f"warm {warm['first_call']*1e3:.0f} ms", "", "", ""))
            print(rows[-1], flush=True)
            continue
        steps = args.steps if name not in ("chain", "medium", "cnn", "transformer", "gpt", "lenet5") \
            else max(4, args.steps // 10)
        contenders = {"tg": tg_step(name)[0]}
        if jax is not None:
            import jax_workloads

            jax_fn = jax_workloads.make(name)
            if jax_fn is not None:
                contenders["jax"] = jax_fn
        if torch is not None:
            torch.set_num_threads(os.cpu_count() or 1)
            contenders["eager"] = torch_step(name)
            if not args.no_torch_compile:
                contenders["compile"] = torch_step(name, compiled=True)
        times = interleaved_medians(contenders, steps, args.rounds)
        t_tg = times["tg"]
        t_eager, t_comp, t_jax = times.get("eager"), times.get("compile"), times.get("jax")
        fmt = lambda t: "-" if t is None else f"{t*1e3:.3f} ms"
        ratio = lambda t: "-" if t is None else f"{t_tg / t:.3f}"
        rows.append((name, fmt(t_tg), fmt(t_eager), ratio(t_eager), fmt(t_comp), ratio(t_comp),
                     fmt(t_jax), ratio(t_jax)))
        print(rows[-1], flush=True)
    print()
    print("| workload | tracegrad c | torch eager | c / eager | torch.compile | c / compile "
          "| jax.jit | c / jax |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r + ("",) * (8 - len(r))) + " |")
    if jax is None:
        print("\n(jax not installed: the jax.jit columns are empty)")


if __name__ == "__main__":
    main()
