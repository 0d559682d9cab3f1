"""``tracegrad demo`` (or ``python -m tracegrad demo``): train a small classifier with a compiled training step.

The data set is generated (no download): ten classes of noisy 8x8 "glyphs", each class a
fixed random template. The model is the ``tiny`` benchmark's MLP (64-128-128-10, tanh).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence

import numpy as np


def make_glyphs(n_per_class=200, noise=2.5, seed=0):
    """(x, y): float32 images flattened to 64 features and int64 labels."""
    rng = np.random.default_rng(seed)
    templates = rng.normal(size=(10, 64)).astype(np.float32)
    y = np.repeat(np.arange(10), n_per_class)
    x = templates[y] + noise * rng.normal(size=(len(y), 64)).astype(np.float32)
    order = rng.permutation(len(y))
    return x[order].astype(np.float32), y[order].astype(np.int64)


def build(tg, seed=0):
    tg.manual_seed(seed)
    nn = tg.nn
    model = nn.Sequential(nn.Linear(64, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(),
                          nn.Linear(128, 10))
    opt = tg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, train_step


def _progress(epoch, epochs, step, steps, loss, width=30):
    done = int(width * (step + 1) / steps)
    bar = "#" * done + "." * (width - done)
    sys.stdout.write(f"\r  epoch {epoch + 1}/{epochs} [{bar}] loss {loss:.4f}")
    sys.stdout.flush()


def _time_steps(fn, batches, repeat):
    times = []
    for _ in range(repeat):
        for xb, yb in batches:
            t0 = time.perf_counter()
            fn(xb, yb)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def run(backend: str = "c", epochs: int = 3, batch: int = 32, quiet: bool = False) -> float:
    """Train the glyph classifier with a compiled step, print timings and what was compiled;
    the test accuracy. The first-call timings use a fresh cache directory (cold), then a
    second function on the same cache (warm)."""
    import tracegrad as tg

    x, y = make_glyphs()
    n_train = int(0.8 * len(y))
    xtr, ytr, xte, yte = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    batches = [(tg.from_numpy(xtr[i:i + batch]), tg.from_numpy(ytr[i:i + batch]))
               for i in range(0, n_train - batch + 1, batch)]
    print(f"tracegrad {tg.__version__} demo: {len(ytr)} training / {len(yte)} test glyphs, "
          f"MLP 64-128-128-10, SGD momentum 0.9, batch {batch}, backend={backend!r}")

    # cold compile: an empty cache directory; warm: a fresh function, same cache
    cache_dir = os.environ.get("TRACEGRAD_CACHE_DIR")
    tmp = tempfile.TemporaryDirectory(prefix="tracegrad-demo-cache-")
    os.environ["TRACEGRAD_CACHE_DIR"] = tmp.name
    try:
        model, opt, step = build(tg)
        compiled = tg.compile(step, backend=backend)
        t0 = time.perf_counter()
        compiled(*batches[0])
        cold = time.perf_counter() - t0
        model2, opt2, step2 = build(tg)
        compiled2 = tg.compile(step2, backend=backend)
        t0 = time.perf_counter()
        compiled2(*batches[0])
        warm = time.perf_counter() - t0
        print(f"compile (first call): cold cache {cold:.3f} s, warm cache {warm:.3f} s")
    finally:
        if cache_dir is None:
            os.environ.pop("TRACEGRAD_CACHE_DIR", None)
        else:
            os.environ["TRACEGRAD_CACHE_DIR"] = cache_dir
        tmp.cleanup()
    # the real run uses the user's cache, so the generated C stays there for inspection
    model, opt, step = build(tg)
    compiled = tg.compile(step, backend=backend)
    for epoch in range(epochs):
        for k, (xb, yb) in enumerate(batches):
            loss = compiled(xb, yb)
            if not quiet and (k % 5 == 0 or k == len(batches) - 1):
                _progress(epoch, epochs, k, len(batches), loss.item())
        if not quiet:
            sys.stdout.write("\n")
    with tg.no_grad():
        pred = model(tg.from_numpy(xte)).argmax(1).numpy()
    acc = float((pred == yte).mean())

    prog = compiled.programs[-1]
    t_comp = _time_steps(compiled, batches[:20], 3)
    _, _, eager_step = build(tg)
    t_eager = _time_steps(eager_step, batches[:20], 1)
    print(f"test accuracy: {acc:.1%}")
    print(f"step time: compiled {t_comp * 1e3:.3f} ms, eager {t_eager * 1e3:.3f} ms "
          f"({t_eager / t_comp:.1f}x)")
    counts = prog.graph.op_counts()
    print(f"IR: {len(prog.graph.nodes)} ops ({', '.join(f'{k} {v}' for k, v in list(counts.items())[:6])}, ...), "
          f"programs compiled: {len(compiled.programs)}")
    print(f"saved-tensor bytes: {prog.saved_bytes} (the whole step is one program: backward runs "
          "inside it, nothing is saved across calls)")
    location = getattr(prog.executable, "path", None)
    if location:
        source = os.path.splitext(location)[0] + ".c"
        print(f"generated C: {source if os.path.exists(source) else location}")
    else:
        print(f"generated code: backend {prog.backend!r} (see compiled.inspect(x, y).source)")
    return acc


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The options of ``tracegrad demo``."""
    ap.add_argument("--backend", default="c", choices=["c", "interpreter"],
                    help="where the compiled step runs (default: %(default)s)")
    ap.add_argument("--epochs", type=int, default=3, help="passes over the data (default: %(default)s)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines, only the summary")


def main(argv: Sequence[str]) -> int:
    """``tracegrad demo ARGV...`` in this process; the exit code.

    >>> main(["--epochs", "x"])  # a usage error: one line on stderr, code 2
    2
    """
    from .cli import main as cli_main

    return cli_main(["demo", *argv])
