"""A custom autograd.Function inside a compiled training step.

The Function is the ``save_for_backward`` example of PyTorch's reference
(out = x*y + y*z + (x*z)*y), used as a layer with a learnable ``scale`` vector as y and z=0.5,
between two Linear layers: the ``custom`` benchmark. tg.compile traces its forward (with the
save_for_backward annotation) and its backward into the same program.

Run: python examples/custom_function.py
"""
import numpy as np

import tracegrad as tg
from tracegrad.autograd import Function
from tracegrad.autograd.function import once_differentiable


class Func(Function):
    @staticmethod
    def forward(ctx, x, y, z):
        w = x * z
        out = x * y + y * z + w * y
        ctx.save_for_backward(x, y, w, out)
        ctx.z = z  # z is not a tensor
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, y, w, out = ctx.saved_tensors
        z = ctx.z
        gx = grad_out * (y + y * z)
        gy = grad_out * (x + z + w)
        return gx, gy, None


def main(steps=50, backend="c"):
    tg.manual_seed(0)
    fc1, fc2 = tg.nn.Linear(64, 128), tg.nn.Linear(128, 10)
    scale = tg.nn.Parameter(tg.ones(128))
    params = list(fc1.parameters()) + [scale] + list(fc2.parameters())
    opt = tg.optim.SGD(params, lr=0.05)

    @tg.compile(backend=backend)
    def step(x, y):
        opt.zero_grad()
        h = Func.apply(fc1(x).tanh(), scale, 0.5)
        loss = tg.nn.functional.cross_entropy(fc2(h), y)
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(0)
    x = tg.from_numpy(rng.normal(size=(32, 64)).astype(np.float32))
    y = tg.from_numpy(rng.integers(0, 10, size=32))
    losses = [step(x, y).item() for _ in range(steps)]
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} over {steps} compiled steps "
          f"({len(step.programs)} program)")
    print(step.inspect(x, y).graph.op_counts())
    return losses


if __name__ == "__main__":
    main()
