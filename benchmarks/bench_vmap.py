"""Per-sample gradients with ``vmap(grad(loss))``: tracegrad's batching rules (eager, and
compiled into one program) against a per-example loop and against ``torch.func`` (and
``jax.vmap`` under ``jax.jit`` when installed), side by side in one process.

    python benchmarks/bench_vmap.py [--batch 32] [--steps 20] [--rounds 5]

The model is tiny's MLP (64-128-128-10, tanh) with a cross-entropy loss per example; every
contender returns the per-example gradients of all six parameters.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import tracegrad as tg  # noqa: E402
from bench_workloads import interleaved_medians  # noqa: E402

SIZES = [64, 128, 128, 10]


def _data(batch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], batch).astype(np.int64)
    weights = [((rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32), np.zeros(o, np.float32))
               for i, o in zip(SIZES[:-1], SIZES[1:])]
    return x, y, weights


def _mlp_loss(F):
    """One example's loss, written once for tracegrad and torch: ``F`` is either library's
    ``nn.functional`` (the two share ``linear``, ``tanh`` and ``cross_entropy``)."""
    def loss(ps, xi, yi):
        h = xi
        for k in range(0, len(ps), 2):
            h = F.linear(h, ps[k], ps[k + 1])
            if k < len(ps) - 2:
                h = h.tanh()
        return F.cross_entropy(h.unsqueeze(0), yi.unsqueeze(0))

    return loss


def tracegrad_contenders(batch):
    import tracegrad.nn.functional as F
    from tracegrad.func import grad, vmap

    x, y, weights = _data(batch)
    params = [tg.tensor(a) for w, b in weights for a in (w, b)]
    xs, ys = tg.tensor(x), tg.tensor(y)
    loss = _mlp_loss(F)
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    compiled = tg.compile(lambda ps, a, b: per_sample(ps, a, b), fullgraph=True)
    compiled(params, xs, ys)

    def loop():
        g = grad(loss)
        return [tg.stack(parts) for parts in zip(*[g(params, xs[i], ys[i]) for i in range(batch)])]

    return {"tg vmap": lambda: per_sample(params, xs, ys), "tg vmap compiled": lambda: compiled(params, xs, ys),
            "tg loop": loop}


def torch_contenders(batch):
    import torch
    import torch.nn.functional as F
    from torch.func import grad, vmap

    x, y, weights = _data(batch)
    params = [torch.tensor(a) for w, b in weights for a in (w, b)]
    xs, ys = torch.tensor(x), torch.tensor(y)
    loss = _mlp_loss(F)
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    return {"torch.func vmap": lambda: per_sample(params, xs, ys)}


def jax_contenders(batch):
    import jax
    import jax.numpy as jnp

    x, y, weights = _data(batch)
    params = [jnp.asarray(a) for w, b in weights for a in (w, b)]
    xs, ys = jnp.asarray(x), jnp.asarray(y)

    def loss(ps, xi, yi):
        h = xi
        for k in range(0, len(ps), 2):
            h = ps[k] @ h + ps[k + 1]
            if k < len(ps) - 2:
                h = jnp.tanh(h)
        return -jax.nn.log_softmax(h)[yi]

    fn = jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    fn(params, xs, ys)
    return {"jax.jit vmap": lambda: jax.block_until_ready(fn(params, xs, ys))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    contenders = tracegrad_contenders(args.batch)
    for extra in (torch_contenders, jax_contenders):
        try:
            contenders.update(extra(args.batch))
        except ImportError:
            pass
    times = interleaved_medians(contenders, args.steps, args.rounds)
    base = times["tg vmap"]
    print(f"| per-sample gradients, batch {args.batch} | time | / tg vmap |")
    print("|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {t * 1e3:.3f} ms | {t / base:.2f} |")


if __name__ == "__main__":
    main()
