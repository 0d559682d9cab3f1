"""Data-parallel training over MPI: the same compiled training step on every rank, each rank a
slice of the batch, gradients averaged across ranks inside the step.

Run on 2 ranks:   python -m tracegrad.distributed.run -n 2 examples/ddp_train.py [backend]
(or: mpiexec -n 2 python -m mpi4py examples/ddp_train.py). On one rank it also runs. backend is
tg.compile's ("c", the default, or "interpreter").

Every rank ends with the same parameters, equal (to float rounding) to what one process
training on the whole batch would reach: the script checks both.
"""
import numpy as np

import tracegrad as tg
import tracegrad.distributed as dist


def main(steps=30, backend="c"):
    dist.init_process_group(backend="mpi")
    rank, world = dist.get_rank(), dist.get_world_size()

    rng = np.random.default_rng(0)  # the same data on every rank; each trains on its slice
    X = tg.tensor(rng.standard_normal((64 * world, 8)), dtype=tg.float32)
    Y = (X @ tg.tensor(rng.standard_normal((8, 1)), dtype=tg.float32)).tanh()
    x, y = X[rank * 64:(rank + 1) * 64], Y[rank * 64:(rank + 1) * 64]

    tg.manual_seed(rank)  # different initial weights: DDP broadcasts rank 0's at construction
    model = tg.nn.parallel.DistributedDataParallel(
        tg.nn.Sequential(tg.nn.Linear(8, 32), tg.nn.Tanh(), tg.nn.Linear(32, 1)))
    opt = tg.optim.Adam(model.parameters(), lr=0.01)

    @tg.compile(backend=backend)
    def step(x, y):  # forward, backward, gradient all-reduce and Adam: one compiled program
        opt.zero_grad()
        loss = tg.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for i in range(steps):
        loss = step(x, y)
    total = loss.detach().clone()
    dist.all_reduce(total, op=dist.ReduceOp.AVG)  # the whole batch's loss

    flat = tg.cat([p.detach().reshape(-1) for p in model.parameters()])
    first = flat.clone()
    dist.broadcast(first, src=0)
    assert tg.equal(flat, first), "replicas diverged"
    if rank == 0:
        print(f"{world} rank(s), {steps} steps: mean loss {total.item():.5f}; replicas identical")
    dist.destroy_process_group()
    return total.item()


if __name__ == "__main__":
    import sys

    main(backend=sys.argv[1] if len(sys.argv) > 1 else "c")
