"""The PyTorch tutorial's first steps, written as PyTorch code: tensors from lists and numpy,
reductions with axis=/keepdims=, autograd by hand on a polynomial fit, torch.no_grad updates,
in-place grad zeroing, and printing of 0-d tensors."""
import math

import numpy as np
import torch

x = torch.linspace(-math.pi, math.pi, 200)
y = torch.sin(x)
a, b, c, d = (torch.tensor(v, requires_grad=True) for v in (0.1, -0.2, 0.3, 0.05))
lr = 1e-6
for t in range(30):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 10 == 9:
        print(t, f"{loss:.3f}", f"{loss}")
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= lr * p.grad
            p.grad = None

m = torch.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
stats = [m.sum(axis=1).tolist(), m.mean(axis=0, keepdims=True).tolist(), m.max(axis=1).values.tolist(),
         torch.Tensor([[1, 2], [3, 4]]).tolist(), m[((0, 2),)].tolist(), m.t().contiguous().view(-1).tolist()]
RESULTS = {"coeffs": [a.item(), b.item(), c.item(), d.item()], "loss": loss.item(), "stats": stats}
