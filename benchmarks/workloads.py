"""The workloads of ../shared/BENCHMARKS.md as tracegrad training steps (also used by tests).

Each ``make_<name>(backend)`` returns ``(step, args)``: call ``step(*args)`` for one training
step; ``params`` of the step are reachable for checks via ``step.params``.
"""
from __future__ import annotations

import numpy as np

import tracegrad as tg
import tracegrad.nn.functional as F
from tracegrad.autograd import Function
from tracegrad.autograd.function import once_differentiable


def _data(batch, features, classes, seed=0):
    rng = np.random.default_rng(seed)
    x = tg.from_numpy(rng.standard_normal((batch, features)).astype(np.float32))
    y = tg.from_numpy(rng.integers(0, classes, size=batch).astype(np.int64))
    return x, y


def _mlp(sizes, act):
    tg.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(tg.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(act())
    return tg.nn.Sequential(*layers)


def _classifier_step(model, opt, backend, options=None):
    """One training step of ``model`` with cross entropy and ``opt`` (compiled with the C
    backend's ``options`` unless ``backend`` is None); ``step.params`` are the model's
    parameters."""
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = tg.compile(step, backend=backend, options=options) if backend else step
    step.params = list(model.parameters())
    return step


def make_tiny(backend="c", batch=32, options=None):
    model = _mlp([64, 128, 128, 10], tg.nn.Tanh)
    return (_classifier_step(model, tg.optim.SGD(model.parameters(), lr=0.1), backend, options),
            _data(batch, 64, 10))


def make_deep_mlp(backend="c", depth=32, width=256, batch=64):
    """The compile-time sweep's step (bench_compile.py, bench_opt_level.py): ``depth`` x
    (Linear(width, width), ReLU), cross entropy, SGD."""
    tg.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [tg.nn.Linear(width, width), tg.nn.ReLU()]
    model = tg.nn.Sequential(*layers)
    return (_classifier_step(model, tg.optim.SGD(model.parameters(), lr=0.01), backend),
            _data(batch, width, width))


def make_medium(backend="c", batch=256):
    model = _mlp([784, 1024, 1024, 10], tg.nn.ReLU)
    return (_classifier_step(model, tg.optim.Adam(model.parameters(), lr=1e-3), backend),
            _data(batch, 784, 10))


def _gelu_tanh(v):
    return F.gelu(v, approximate="tanh")


def make_chain(backend="c", n=1 << 22):
    rng = np.random.default_rng(0)
    x, a, b = (tg.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True) for _ in range(3))

    def step(x, a, b):
        loss = (_gelu_tanh(x * a + b) * x.sigmoid()).sum()
        return tg.autograd.grad(loss, [x, a, b])

    step = tg.compile(step, backend=backend) if backend else step
    step.params = [x, a, b]
    return step, (x, a, b)


class ScaleFunc(Function):
    """The ``save_for_backward`` example of PyTorch's reference: x*y + y*z + (x*z)*y."""

    @staticmethod
    def forward(ctx, x, y, z):
        w = x * z
        out = x * y + y * z + w * y
        ctx.save_for_backward(x, y, w, out)
        ctx.z = z
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, y, w, out = ctx.saved_tensors
        z = ctx.z
        return grad_out * (y + y * z), grad_out * (x + z + w), None


def make_custom(backend="c", batch=32):
    tg.manual_seed(0)
    fc1, fc2 = tg.nn.Linear(64, 128), tg.nn.Linear(128, 10)
    scale = tg.nn.Parameter(tg.ones(128))
    params = list(fc1.parameters()) + [scale] + list(fc2.parameters())
    opt = tg.optim.SGD(params, lr=0.05)

    def step(x, y):
        opt.zero_grad()
        h = ScaleFunc.apply(fc1(x).tanh(), scale, 0.5)
        loss = F.cross_entropy(fc2(h), y)
        loss.backward()
        opt.step()
        return loss

    step = tg.compile(step, backend=backend) if backend else step
    step.params = params
    return step, _data(batch, 64, 10)


def make_cnn(backend="c", batch=64):
    """Not one of ../shared/BENCHMARKS.md's: a small CNN on 28x28 images (conv 1->16, relu,
    pool, conv 16->32, relu, pool, linear 1568->10), batch 64, SGD lr 0.01."""
    tg.manual_seed(0)
    nn = tg.nn
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
    step = _classifier_step(model, tg.optim.SGD(model.parameters(), lr=0.01), backend)
    x, y = _data(batch, 28 * 28, 10)
    return step, (x.reshape(batch, 1, 28, 28), y)


def transformer_block(lib, n_embd=128, n_head=4, block_size=64):
    """A pre-norm GPT block (causal self-attention and a 4x GELU MLP) over ``lib``: tracegrad
    or torch, one definition for both so that the peers run the same model."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.qkv, self.proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.fc, self.out = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)
            self.mask = lib.tril(lib.ones(block_size, block_size)) == 0

        def attention(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, n_head, c // n_head).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / (c // n_head) ** 0.5)
            att = F.softmax(att.masked_fill(self.mask[:t, :t], float("-inf")), dim=-1)
            return self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))

        def forward(self, x):
            x = x + self.attention(self.ln1(x))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return Block()


def transformer_data(batch=16, block_size=64, n_embd=128, seed=0):
    """(input, target) as NumPy arrays: the block regresses a random (B, T, C) target."""
    rng = np.random.default_rng(seed)
    shape = (batch, block_size, n_embd)
    return (rng.standard_normal(shape).astype(np.float32),
            rng.standard_normal(shape).astype(np.float32))


def make_transformer(backend="c", batch=16, options=None):
    """Not one of ../shared/BENCHMARKS.md's: one training step of a transformer block (issue 26:
    n_embd 128, 4 heads, T 64, batch 16; mean squared error to a random target; AdamW lr 1e-3).
    The Linears read (16, 64, C) inputs and attention multiplies per batch and head."""
    tg.manual_seed(0)
    model = transformer_block(tg)
    opt = tg.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    step = tg.compile(step, backend=backend, options=options) if backend else step
    step.params = list(model.parameters())
    return step, tuple(tg.from_numpy(a) for a in transformer_data(batch))


def lenet5(lib):
    """LeNet-5 as ../shared/BENCHMARKS.md has it (5x5 convolutions, max-pooling, ReLU, three
    Linears) for 1x28x28 images: the first convolution pads by 2, as LeNet's 32x32 input."""
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def lenet5_data(batch=64, seed=0):
    """(images (batch, 1, 28, 28), labels) as NumPy arrays."""
    x, y = _data(batch, 28 * 28, 10, seed)
    return x.numpy().reshape(batch, 1, 28, 28), y.numpy()


def make_lenet5(backend="c", batch=64, options=None):
    """LeNet-5's training step: cross entropy, Adam lr 1e-3, batch 64."""
    tg.manual_seed(0)
    model = lenet5(tg)
    step = _classifier_step(model, tg.optim.Adam(model.parameters(), lr=1e-3), backend, options)
    return step, tuple(tg.from_numpy(a) for a in lenet5_data(batch))


GPT_SIZES = {"vocab": 512, "n_embd": 128, "n_head": 4, "n_layer": 2, "block_size": 64, "batch": 16}


def gpt(lib, vocab=512, n_embd=128, n_head=4, n_layer=2, block_size=64):
    """A GPT over ``lib`` (tracegrad or torch, one definition for both): token and position
    embeddings, ``n_layer`` of transformer_block's blocks, a final LayerNorm and a head tied to
    the token embedding; ``model(idx, targets)`` is the mean cross entropy of the next token."""
    nn, F = lib.nn, lib.nn.functional

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block_size, n_embd)
            self.blocks = nn.ModuleList([transformer_block(lib, n_embd, n_head, block_size)
                                         for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            for emb in (self.wte, self.wpe):  # GPT-2's initialisation: logits start near uniform
                nn.init.normal_(emb.weight, std=0.02)

        def forward(self, idx, targets):
            b, t = idx.shape
            x = self.wte(idx) + self.wpe(lib.arange(t))
            for block in self.blocks:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.T  # the tied head
            return F.cross_entropy(logits.reshape(b * t, vocab), targets.reshape(b * t))

    return GPT()


def gpt_data(batch=16, block_size=64, vocab=512, seed=0):
    """(tokens, next tokens) as int64 NumPy arrays of shape (batch, block_size): a random
    sequence of batch * block_size + 1 tokens, cut into rows."""
    rng = np.random.default_rng(seed)
    seq = rng.integers(0, vocab, size=batch * block_size + 1).astype(np.int64)
    return seq[:-1].reshape(batch, block_size), seq[1:].reshape(batch, block_size)


def make_gpt(backend="c", options=None, **sizes):
    """Not one of ../shared/BENCHMARKS.md's as sized there: a GPT-style training step (issue 26:
    vocab 512, n_embd 128, 4 heads, 2 blocks, T 64, batch 16; AdamW lr 1e-3, weight decay
    0.01). ``sizes`` override GPT_SIZES."""
    sz = dict(GPT_SIZES, **sizes)
    tg.manual_seed(0)
    model = gpt(tg, sz["vocab"], sz["n_embd"], sz["n_head"], sz["n_layer"], sz["block_size"])
    opt = tg.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(idx, targets):
        opt.zero_grad()
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss

    step = tg.compile(step, backend=backend, options=options) if backend else step
    step.params = list(model.parameters())
    data = gpt_data(sz["batch"], sz["block_size"], sz["vocab"])
    return step, tuple(tg.from_numpy(a) for a in data)


WORKLOADS = {"tiny": make_tiny, "medium": make_medium, "chain": make_chain, "custom": make_custom,
             "cnn": make_cnn, "transformer": make_transformer, "lenet5": make_lenet5, "gpt": make_gpt}
