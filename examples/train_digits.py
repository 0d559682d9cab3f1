"""Train an MLP on scikit-learn's 8x8 digits with a compiled training step.

Needs scikit-learn (pip install scikit-learn); without it, it says so and exits.
Run: python examples/train_digits.py
"""
import sys
import time

import numpy as np

import tracegrad as tg


def load():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        print("this example needs scikit-learn: pip install scikit-learn")
        sys.exit(0)
    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return x, d.target.astype(np.int64)


def main(epochs=10, batch=32):
    x, y = load()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    x, y = x[order], y[order]
    n = int(0.8 * len(y))
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(64, 128), tg.nn.ReLU(), tg.nn.Dropout(0.1),
                             tg.nn.Linear(128, 10))
    opt = tg.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = tg.nn.CrossEntropyLoss()

    @tg.compile
    def step(xb, yb):
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    t0 = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        for i in range(0, n - batch + 1, batch):
            loss = step(tg.from_numpy(x[i:i + batch]), tg.from_numpy(y[i:i + batch]))
        model.eval()
        with tg.no_grad():
            acc = (model(tg.from_numpy(x[n:])).argmax(1).numpy() == y[n:]).mean()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {acc:.1%}")
    print(f"{time.perf_counter() - t0:.2f} s, {len(step.programs)} compiled program(s)")


if __name__ == "__main__":
    main()
