"""nn.utils fusion (conv/linear + batch norm), the hook-based spectral_norm, skip_init,
stateless.functional_call and the submodule aliases, against PyTorch."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def _copy_state(ours, theirs):
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})


def _bn_with_stats(lib, n):
    bn = getattr(lib.nn, "BatchNorm1d")(n)
    with (tg.no_grad() if lib is tg else torch.no_grad()):
        bn.running_mean.copy_(lib.tensor(rng.standard_normal(n).astype(np.float32)))
        bn.running_var.copy_(lib.tensor(rng.random(n).astype(np.float32) + 0.5))
        bn.weight.copy_(lib.tensor(rng.standard_normal(n).astype(np.float32)))
        bn.bias.copy_(lib.tensor(rng.standard_normal(n).astype(np.float32)))
    return bn.eval()


@pytest.mark.parametrize("kind", ["conv", "conv_nobias", "convT", "linear"])
def test_fusion_equals_torchs_and_the_unfused_pair(kind):
    make = {"conv": lambda lib: lib.nn.Conv2d(2, 3, 3), "conv_nobias": lambda lib: lib.nn.Conv2d(2, 3, 3, bias=False),
            "convT": lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), "linear": lambda lib: lib.nn.Linear(4, 3)}[kind]
    layer, t_layer = make(tg).eval(), make(torch).eval()
    _copy_state(layer, t_layer)
    bn = _bn_with_stats(tg, 3)
    t_bn = torch.nn.BatchNorm1d(3).eval()
    _copy_state(bn, t_bn)
    if kind == "linear":
        fused, t_fused = tg.nn.utils.fuse_linear_bn_eval(layer, bn), torch.nn.utils.fuse_linear_bn_eval(t_layer, t_bn)
        x = rng.standard_normal((5, 4)).astype(np.float32)
        unfused = bn(layer(tg.tensor(x)))
    else:
        transpose = kind == "convT"
        fused = tg.nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        t_fused = torch.nn.utils.fuse_conv_bn_eval(t_layer, t_bn, transpose=transpose)
        x = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
        y = layer(tg.tensor(x))
        unfused = y * (bn.weight / (bn.running_var + bn.eps).sqrt()).reshape(1, -1, 1, 1) + \
            (bn.bias - bn.running_mean * bn.weight / (bn.running_var + bn.eps).sqrt()).reshape(1, -1, 1, 1)
    for k, v in fused.state_dict().items():
        np.testing.assert_allclose(v.numpy(), t_fused.state_dict()[k].numpy(), rtol=1e-6, atol=1e-6, err_msg=k)
    assert isinstance(fused.weight, tg.nn.Parameter) and fused is not layer
    np.testing.assert_allclose(fused(tg.tensor(x)).detach().numpy(), unfused.detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tg.nn.utils.fuse_linear_bn_eval(tg.nn.Linear(2, 2), tg.nn.BatchNorm1d(2))


def test_hook_spectral_norm_equals_torchs_in_training_and_eval():
    ours, theirs = tg.nn.Linear(5, 4), torch.nn.Linear(5, 4)
    _copy_state(ours, theirs)
    tg.nn.utils.spectral_norm(ours, n_power_iterations=2)
    torch.nn.utils.spectral_norm(theirs, n_power_iterations=2)
    _copy_state(ours, theirs)  # the same u, v and weight_orig
    assert list(ours.state_dict()) == list(theirs.state_dict())
    x = rng.standard_normal((3, 5)).astype(np.float32)
    for mode in ("train", "train", "eval"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        a, b = ours(tg.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    a.square().sum().backward()
    b.square().sum().backward()
    np.testing.assert_allclose(ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy(), rtol=1e-4, atol=1e-6)
    for k in ("weight_u", "weight_v"):
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), theirs.state_dict()[k].numpy(), rtol=1e-5, atol=1e-6)
    tg.nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not found"):
        tg.nn.utils.remove_spectral_norm(ours)


def test_skip_init_stateless_and_submodule_aliases():
    layer = tg.nn.utils.skip_init(tg.nn.Linear, 3, 2)
    assert layer.weight.shape == (2, 3)
    with pytest.raises(RuntimeError, match="device"):
        tg.nn.utils.skip_init(lambda n: tg.nn.Linear(n, n), 2)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = tg.nn.utils.stateless.functional_call(layer, {"weight": tg.ones(2, 3), "bias": tg.zeros(2)},
                                                    (tg.ones(1, 3),))
    np.testing.assert_array_equal(out.detach().numpy(), [[3.0, 3.0]])
    assert tg.nn.utils.clip_grad.clip_grad_norm_ is tg.nn.utils.clip_grad_norm_
    assert tg.nn.utils.convert_parameters.parameters_to_vector is tg.nn.utils.parameters_to_vector
    assert tg.nn.utils.convert_conv2d_weight_memory_format(layer, None) is layer


def test_batchnorm_resets_like_torch():
    ours, theirs = _bn_with_stats(tg, 3), _bn_with_stats(torch, 3)
    ours.reset_parameters()
    theirs.reset_parameters()
    for k, v in ours.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), theirs.state_dict()[k].numpy())
