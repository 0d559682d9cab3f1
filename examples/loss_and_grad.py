"""A loss-and-gradient function: tg.autograd.grad inside tg.compile.

Useful when the gradient itself is the product (an optimiser written elsewhere, a simulator, a
physics-informed loss): the compiled function returns the loss and the gradients w.r.t. its
inputs in one native call. The Hessian-vector product below differentiates twice
(create_graph=True), also captured.

Run: python examples/loss_and_grad.py
"""
import numpy as np

import tracegrad as tg


def rosenbrock(p):
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x * x) ** 2


@tg.compile
def loss_and_grad(p):
    p = p.detach().requires_grad_()
    loss = rosenbrock(p)
    (g,) = tg.autograd.grad(loss, p)
    return loss.detach(), g


@tg.compile
def hvp(p, v):
    p = p.detach().requires_grad_()
    (g,) = tg.autograd.grad(rosenbrock(p), p, create_graph=True)
    (hv,) = tg.autograd.grad((g * v).sum(), p)
    return hv


def main():
    p = tg.tensor([-1.5, 2.0], dtype=tg.float64)
    for _ in range(2000):  # plain gradient descent
        loss, g = loss_and_grad(p)
        p = p - 1e-3 * g
    print(f"after 2000 steps: p = {p.tolist()}, loss = {loss.item():.6f}")
    print("Hessian-vector product at p with v=[1, 0]:", hvp(p, tg.tensor([1.0, 0.0], dtype=tg.float64)).tolist())
    x, y = p.tolist()
    exact = [1200 * x * x - 400 * y + 2, -400 * x]
    assert np.allclose(hvp(p, tg.tensor([1.0, 0.0], dtype=tg.float64)).numpy(), exact)
    return p


if __name__ == "__main__":
    main()
