"""tg.nn.utils.prune against torch.nn.utils.prune: masks (deterministic methods equal,
random ones by their counts and structure), iterative pruning through PruningContainer,
global pruning, remove, state dicts, gradients through the mask, compiled forward."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.nn.utils import prune

from compile_oracle import run_both

torch = pytest.importorskip("torch")
import torch.nn.utils.prune as tprune  # noqa: E402


def _pair(shape=(6, 5)):
    tg.manual_seed(0)
    ours = tg.nn.Linear(shape[1], shape[0])
    theirs = torch.nn.Linear(shape[1], shape[0])
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _same(ours, theirs, x=None):
    so, st = ours.state_dict(), theirs.state_dict()
    assert list(so) == list(st)
    for k in so:
        np.testing.assert_array_equal(so[k].numpy(), st[k].numpy(), err_msg=k)
    x = np.random.default_rng(1).standard_normal((3, ours.in_features)).astype(np.float32)
    a, b = ours(tg.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    a.square().sum().backward()
    b.square().sum().backward()
    np.testing.assert_allclose(ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("steps", [
    [("l1_unstructured", dict(amount=0.3))],
    [("l1_unstructured", dict(amount=7))],
    [("ln_structured", dict(amount=0.5, n=2, dim=0))],
    [("ln_structured", dict(amount=2, n=1, dim=1))],
    [("l1_unstructured", dict(amount=0.3)), ("ln_structured", dict(amount=0.4, n=2, dim=0)),
     ("l1_unstructured", dict(amount=0.2))],
    [("identity", dict())],
], ids=lambda s: "+".join(n for n, _ in s))
def test_deterministic_pruning_equals_torchs(steps):
    ours, theirs = _pair()
    for name, kw in steps:
        getattr(prune, name)(ours, "weight", **kw)
        getattr(tprune, name)(theirs, "weight", **kw)
    _same(ours, theirs)
    assert prune.is_pruned(ours)
    hook = [h for h in ours._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)][0]
    assert isinstance(hook, prune.PruningContainer) == (len(steps) > 1)
    prune.remove(ours, "weight")
    tprune.remove(theirs, "weight")
    assert not prune.is_pruned(ours)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())


def test_custom_and_global_pruning_equal_torchs():
    (a1, b1), (a2, b2) = _pair((4, 3)), _pair((3, 5))
    mask = (np.arange(12).reshape(4, 3) % 3 != 0).astype(np.float32)
    prune.custom_from_mask(a1, "bias", tg.tensor(np.array([1.0, 0.0, 1.0, 1.0], np.float32)))
    tprune.custom_from_mask(b1, "bias", torch.tensor([1.0, 0.0, 1.0, 1.0]))
    prune.global_unstructured([(a1, "weight"), (a2, "weight")], prune.L1Unstructured, amount=0.4)
    tprune.global_unstructured([(b1, "weight"), (b2, "weight")], tprune.L1Unstructured, amount=0.4)
    for o, t in ((a1, b1), (a2, b2)):
        for k, v in o.state_dict().items():
            np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy(), err_msg=k)
    assert mask.shape == (4, 3)


def test_random_pruning_counts_and_structure():
    layer = tg.nn.Linear(5, 6)
    prune.random_unstructured(layer, "weight", amount=0.5)
    assert int((layer.weight_mask == 0).sum()) == 15
    conv = tg.nn.Conv2d(3, 8, 3)
    prune.random_structured(conv, "weight", amount=3, dim=0)
    per_channel = conv.weight_mask.sum((1, 2, 3)).numpy()
    assert sorted(set(per_channel.tolist())) == [0.0, 27.0] and (per_channel == 0).sum() == 3


def test_bad_amounts_and_dims_are_named():
    with pytest.raises(ValueError, match="should either be a float in the range"):
        prune.l1_unstructured(tg.nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(tg.nn.Linear(2, 2), "weight", amount=5)
    layer = tg.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(layer, "bias", amount=1, n=2, dim=0)
    assert "bias" in dict(layer.named_parameters())  # left as it was
    with pytest.raises(ValueError, match="has to be pruned"):
        prune.remove(layer, "weight")


def test_compiled_training_through_a_pruned_layer_equals_eager():
    def make():
        tg.manual_seed(0)
        layer = tg.nn.Linear(4, 3)
        prune.l1_unstructured(layer, "weight", amount=0.5)
        opt = tg.optim.SGD(layer.parameters(), lr=0.1)
        x = tg.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))

        def step(x):
            opt.zero_grad()
            loss = layer(x).square().sum()
            loss.backward()
            opt.step()
            return loss

        return step, lambda k: (x,), [layer.weight_orig, layer.bias, layer.weight_mask]

    run_both(make, calls=4, backend="c", fullgraph=True)
