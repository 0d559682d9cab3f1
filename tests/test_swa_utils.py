"""tg.optim.swa_utils against torch.optim.swa_utils: averaged parameters (SWA, EMA by list and
by tensor, buffers averaged or copied), SWALR's rates, update_bn's statistics, state dicts."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.optim import swa_utils as ours_swa

torch = pytest.importorskip("torch")
from torch.optim import swa_utils as torch_swa  # noqa: E402


def _pair():
    tg.manual_seed(0)
    a = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.BatchNorm1d(4), tg.nn.Linear(4, 2))
    b = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    b.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in a.state_dict().items()})
    return a, b


def _perturb(a, b, seed):
    rng = np.random.default_rng(seed)
    for (_, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items()):
        if p.dtype.is_floating_point:
            d = rng.standard_normal(tuple(p.shape)).astype(np.float32)
            with tg.no_grad():
                p.add_(tg.tensor(d))
            with torch.no_grad():
                q.add_(torch.from_numpy(d))


@pytest.mark.parametrize("how", ["swa", "ema_multi", "ema_single", "swa_single", "buffers"])
def test_averaged_model_equals_torchs(how):
    a, b = _pair()
    kw = {"swa": ({}, {}), "ema_multi": ({"multi_avg_fn": ours_swa.get_ema_multi_avg_fn(0.8)},
                                         {"multi_avg_fn": torch_swa.get_ema_multi_avg_fn(0.8)}),
          "ema_single": ({"avg_fn": ours_swa.get_ema_avg_fn(0.7)}, {"avg_fn": torch_swa.get_ema_avg_fn(0.7)}),
          "swa_single": ({"avg_fn": ours_swa.get_swa_avg_fn()}, {"avg_fn": torch_swa.get_swa_avg_fn()}),
          "buffers": ({"use_buffers": True}, {"use_buffers": True})}[how]
    avg_a, avg_b = ours_swa.AveragedModel(a, **kw[0]), torch_swa.AveragedModel(b, **kw[1])
    for step in range(4):
        _perturb(a, b, step)
        avg_a.update_parameters(a)
        avg_b.update_parameters(b)
    sa, sb = avg_a.state_dict(), avg_b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        np.testing.assert_allclose(sa[k].numpy(), sb[k].numpy(), rtol=1e-6, atol=1e-6, err_msg=k)
    x = np.random.default_rng(9).standard_normal((5, 3)).astype(np.float32)
    avg_a.eval()
    avg_b.eval()
    np.testing.assert_allclose(avg_a(tg.tensor(x)).detach().numpy(), avg_b(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 3])
def test_swalr_rates_equal_torchs(strategy, anneal_epochs):
    rates = []
    for lib, swa in ((tg, ours_swa), (torch, torch_swa)):
        opt = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.ones(1))]},
                             {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}], lr=1.0)
        sched = swa.SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=anneal_epochs, anneal_strategy=strategy)
        seq = []
        for _ in range(6):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        rates.append(seq)
    np.testing.assert_allclose(rates[0], rates[1], rtol=1e-15)
    with pytest.raises(ValueError, match="anneal_strategy"):
        ours_swa.SWALR(tg.optim.SGD([tg.nn.Parameter(tg.ones(1))], lr=1.0), 0.1, anneal_strategy="step")


def test_update_bn_equals_torchs():
    a, b = _pair()
    rng = np.random.default_rng(4)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    ours_swa.update_bn([(tg.tensor(x), 0) for x in batches], a)
    torch_swa.update_bn([(torch.tensor(x), 0) for x in batches], b)
    for k in ("1.running_mean", "1.running_var", "1.num_batches_tracked"):
        np.testing.assert_allclose(a.state_dict()[k].numpy(), b.state_dict()[k].numpy(), rtol=1e-5, err_msg=k)
    assert a[1].momentum == 0.1 and a.training
