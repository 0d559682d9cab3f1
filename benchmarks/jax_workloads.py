"""The workloads of ../shared/BENCHMARKS.md as ``jax.jit`` steps, the JAX peer of
``workloads.py`` (same sizes, same data generator, same optimizer hyperparameters).

``make(name)`` returns a no-argument callable running one step to completion
(``block_until_ready``), or None for a workload JAX has no entry for (``custom``, as in the
peers' table). Parameters are threaded through the step as JAX does it: the jitted function
returns the updated parameters (and optimizer state) and the next call takes them, with
their buffers donated so XLA may update them in place.
"""
from __future__ import annotations

import numpy as np


def _init_mlp(sizes, key):
    import jax

    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        key, k1, k2 = jax.random.split(key, 3)
        bound = 1.0 / np.sqrt(a)  # PyTorch's Linear initialisation range
        params.append((jax.random.uniform(k1, (a, b), minval=-bound, maxval=bound),
                       jax.random.uniform(k2, (b,), minval=-bound, maxval=bound)))
    return params


def _mlp_loss(act):
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        h = x
        for k, (w, b) in enumerate(params):
            h = h @ w + b
            if k < len(params) - 1:
                h = act(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    return loss


def _data(batch, features, classes):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((batch, features)).astype(np.float32),
            rng.integers(0, classes, size=batch).astype(np.int32))


def _runner(jitted, state, *data):
    """Call ``jitted(state, *data) -> (state, out)`` repeatedly, threading the state."""
    box = [state]

    def step():
        box[0], out = jitted(box[0], *data)
        out.block_until_ready()

    return step


def make_tiny():
    import jax
    import jax.numpy as jnp

    loss_fn = _mlp_loss(jnp.tanh)

    def sgd_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

    x, y = _data(32, 64, 10)
    params = _init_mlp([64, 128, 128, 10], jax.random.PRNGKey(0))
    return _runner(jax.jit(sgd_step, donate_argnums=0), params, jnp.asarray(x), jnp.asarray(y))


def make_medium():
    import jax
    import jax.numpy as jnp

    loss_fn = _mlp_loss(jax.nn.relu)
    lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8

    def adam_step(state, x, y):
        params, m, v, t = state
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return (params, m, v, t), loss

    x, y = _data(256, 784, 10)
    params = _init_mlp([784, 1024, 1024, 10], jax.random.PRNGKey(0))
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), jnp.float32(0))
    return _runner(jax.jit(adam_step, donate_argnums=0), state, jnp.asarray(x), jnp.asarray(y))


def make_chain(n=1 << 22):
    import jax
    import jax.numpy as jnp

    def loss(x, a, b):
        return jnp.sum(jax.nn.gelu(x * a + b, approximate=True) * jax.nn.sigmoid(x))

    rng = np.random.default_rng(0)
    x, a, b = (jnp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(3))
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))

    def step():
        jax.block_until_ready(grad(x, a, b))

    return step


def _adam(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
    """(init(params) -> state, step(loss_fn) -> jitted (state, *data) -> (state, loss)): Adam
    as torch.optim.Adam computes it, over any pytree of parameters."""
    import jax
    import jax.numpy as jnp

    tm = jax.tree_util.tree_map

    def init(params):
        return (params, tm(jnp.zeros_like, params), tm(jnp.zeros_like, params), jnp.float32(0))

    def make(loss_fn):
        def adam_step(state, *data):
            params, m, v, t = state
            loss, grads = jax.value_and_grad(loss_fn)(params, *data)
            t = t + 1
            m = tm(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
            v = tm(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
            c1, c2 = 1 - b1 ** t, 1 - b2 ** t
            params = tm(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
            return (params, m, v, t), loss

        return jax.jit(adam_step, donate_argnums=0)

    return init, make


def make_lenet5(batch=64):
    """workloads.lenet5 in JAX: NCHW convolutions (lax.conv_general_dilated), 2x2 max-pooling
    (lax.reduce_window), ReLU, three dense layers; cross entropy; Adam lr 1e-3."""
    import jax
    import jax.numpy as jnp

    def conv_init(key, out_c, in_c, k):
        bound = 1.0 / np.sqrt(in_c * k * k)
        k1, k2 = jax.random.split(key)
        return (jax.random.uniform(k1, (out_c, in_c, k, k), minval=-bound, maxval=bound),
                jax.random.uniform(k2, (out_c,), minval=-bound, maxval=bound))

    def conv(x, wb, pad):
        y = jax.lax.conv_general_dilated(x, wb[0], (1, 1), [(pad, pad), (pad, pad)],
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + wb[1][None, :, None, None]

    def pool(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def loss(params, x, y):
        c1, c2, dense = params
        h = pool(jax.nn.relu(conv(x, c1, 2)))
        h = pool(jax.nn.relu(conv(h, c2, 0))).reshape(x.shape[0], -1)
        for k, (w, b) in enumerate(dense):
            h = h @ w + b
            if k < len(dense) - 1:
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = (conv_init(k1, 6, 1, 5), conv_init(k2, 16, 6, 5), _init_mlp([400, 120, 84, 10], k3))
    x, y = _data(batch, 28 * 28, 10)
    init, make = _adam()
    return _runner(make(loss), init(params), jnp.asarray(x.reshape(batch, 1, 28, 28)), jnp.asarray(y))


def make_gpt():
    """workloads.gpt in JAX, sized by workloads.GPT_SIZES: embeddings, pre-norm blocks (causal
    attention, exact-GELU MLP), final LayerNorm, tied head, cross entropy; AdamW (lr 1e-3,
    weight decay 0.01 on every parameter, as torch.optim.AdamW over model.parameters())."""
    import jax
    import jax.numpy as jnp

    import workloads

    sz = workloads.GPT_SIZES
    vocab, c, nh, t = sz["vocab"], sz["n_embd"], sz["n_head"], sz["block_size"]
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))

    def dense(a, b):
        bound = 1.0 / np.sqrt(a)
        return (jax.random.uniform(next(keys), (a, b), minval=-bound, maxval=bound),
                jax.random.uniform(next(keys), (b,), minval=-bound, maxval=bound))

    def norm():
        return jnp.ones(c), jnp.zeros(c)

    params = {"wte": 0.02 * jax.random.normal(next(keys), (vocab, c)),
              "wpe": 0.02 * jax.random.normal(next(keys), (t, c)), "ln_f": norm(),
              "blocks": [{"ln1": norm(), "qkv": dense(c, 3 * c), "proj": dense(c, c), "ln2": norm(),
                          "fc": dense(c, 4 * c), "out": dense(4 * c, c)} for _ in range(sz["n_layer"])]}
    causal = jnp.tril(jnp.ones((t, t), dtype=bool))

    def layer_norm(x, wb):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * wb[0] + wb[1]

    def block(x, p):
        b = x.shape[0]
        h = layer_norm(x, p["ln1"]) @ p["qkv"][0] + p["qkv"][1]
        q, k, v = (z.reshape(b, t, nh, c // nh).transpose(0, 2, 1, 3) for z in jnp.split(h, 3, axis=2))
        att = jnp.where(causal, (q @ k.transpose(0, 1, 3, 2)) * (1.0 / (c // nh) ** 0.5), -jnp.inf)
        y = (jax.nn.softmax(att, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, t, c)
        x = x + y @ p["proj"][0] + p["proj"][1]
        h = jax.nn.gelu(layer_norm(x, p["ln2"]) @ p["fc"][0] + p["fc"][1], approximate=False)
        return x + h @ p["out"][0] + p["out"][1]

    def loss(params, idx, targets):
        x = params["wte"][idx] + params["wpe"][None]
        for p in params["blocks"]:
            x = block(x, p)
        logp = jax.nn.log_softmax(layer_norm(x, params["ln_f"]) @ params["wte"].T)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 0.01
    tm = jax.tree_util.tree_map

    def adamw_step(state, idx, targets):
        params, m, v, step = state
        value, grads = jax.value_and_grad(loss)(params, idx, targets)
        step = step + 1
        m = tm(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = tm(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        c1, c2 = 1 - b1 ** step, 1 - b2 ** step
        params = tm(lambda p, m, v: p * (1 - lr * wd) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return (params, m, v, step), value

    idx, targets = workloads.gpt_data(sz["batch"], t, vocab)
    state = (params, tm(jnp.zeros_like, params), tm(jnp.zeros_like, params), jnp.float32(0))
    return _runner(jax.jit(adamw_step, donate_argnums=0), state, jnp.asarray(idx), jnp.asarray(targets))


WORKLOADS = {"tiny": make_tiny, "medium": make_medium, "chain": make_chain, "lenet5": make_lenet5,
             "gpt": make_gpt}


def make(name):
    maker = WORKLOADS.get(name)
    return maker() if maker is not None else None
