"""tg.nn: Module machinery, Parameter, containers, layers, losses and default initialisation,
checked against PyTorch (values, gradients, state_dict keys, reprs, error messages)."""
import copy
import math
import re

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn

torch = pytest.importorskip("torch")


def from_torch(tg_module, torch_module):
    """Copy a torch module's weights into the tracegrad module with the same structure."""
    tg_module.load_state_dict({k: v.detach().numpy().copy() for k, v in torch_module.state_dict().items()})
    return tg_module


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               np.asarray(b.detach().numpy() if hasattr(b, "detach") else b),
                               rtol=rtol, atol=atol)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", tg.ones(3))
        self.register_buffer("cache", tg.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.Tanh()
        self.fc2 = torch.nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", torch.ones(3))
        self.register_buffer("cache", torch.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# ----------------------------------------------------------------------------- Parameter
def test_parameter_basics():
    data = tg.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, tg.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf
    assert repr(p) == repr(torch.nn.Parameter(torch.tensor([1.0, 2.0]))).replace("torch", "tracegrad")
    with tg.no_grad():
        p.mul_(2)  # shares storage with data, like PyTorch
    assert data.tolist() == [2.0, 4.0]
    assert not nn.Parameter(tg.ones(2), requires_grad=False).requires_grad
    assert type(p * 2) is tg.Tensor
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.tolist() == p.tolist()
    with tg.no_grad():
        q.zero_()
    assert p.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(tg.tensor([1, 2]))


# ----------------------------------------------------------------------------- registration, traversal
def test_named_parameters_buffers_and_state_dict_keys_match_torch():
    net, ref = Net(), TorchNet()
    assert [n for n, _ in net.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in net.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert list(net.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in net.named_modules()] == [n for n, _ in ref.named_modules()]
    assert [n for n, _ in net.named_children()] == [n for n, _ in ref.named_children()]
    assert [n for n, _ in net.named_parameters(recurse=False)] == []
    assert len(list(net.parameters())) == 3 and len(list(net.modules())) == 4
    assert [n for n, _ in net.named_parameters(prefix="model")] == [
        "model.fc1.weight", "model.fc1.bias", "model.fc2.weight"]


def test_shared_parameters_are_listed_once():
    a = nn.Linear(3, 3)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(seq.parameters())) == 2
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_setattr_rules_and_errors():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'tracegrad.Tensor' as parameter 'weight'"):
        net.fc1.weight = tg.ones(8, 4)
    net.fc1.bias = None
    assert net.fc1.bias is None and "fc1.bias" not in net.state_dict()
    net.scale = tg.full((3,), 2.0)  # a registered buffer name stays a buffer
    assert net.state_dict()["scale"].tolist() == [2.0, 2.0, 2.0]
    net.extra = nn.Parameter(tg.zeros(1))
    assert "extra" in dict(net.named_parameters())
    del net.extra
    assert "extra" not in dict(net.named_parameters())
    with pytest.raises(KeyError, match="contain"):
        net.register_buffer("a.b", tg.ones(1))
    with pytest.raises(KeyError, match="already exists"):
        net.register_parameter("training", nn.Parameter(tg.ones(1)))
    with pytest.raises(TypeError, match="cannot assign 'tracegrad.Tensor' object to parameter"):
        net.register_parameter("w", tg.ones(1))
    with pytest.raises(ValueError, match="non-leaf"):
        net.register_parameter("w", _non_leaf_param())
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tg.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def _non_leaf_param():
    p = nn.Parameter(tg.ones(1))
    p._grad_fn = (p * 2).grad_fn  # a Parameter carrying history, which modules must refuse
    return p


def test_train_eval_requires_grad_and_apply():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert net.training and net[1].training
    assert net.eval() is net and not net[1].training
    net.train()
    assert net[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Dropout", "Sequential"]


def test_zero_grad_modes():
    net = nn.Linear(3, 2)
    net(tg.ones(1, 3)).sum().backward()
    g = net.weight.grad
    net.zero_grad(set_to_none=False)
    assert net.weight.grad is g and g.tolist() == [[0.0] * 3] * 2
    net.zero_grad()
    assert net.weight.grad is None and net.bias.grad is None


def test_forward_hooks_and_missing_forward():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(tg.ones(1, 2))
    close(out, lin.bias.detach().reshape(1, 2) + 1)
    assert calls == [tg.Size([1, 2])]
    h1.remove(), h2.remove()
    close(lin(tg.ones(1, 2)), tg.ones(1, 2) @ lin.weight.detach().T + lin.bias.detach())
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.Module()(1)


# ----------------------------------------------------------------------------- state_dict
def test_state_dict_roundtrip_and_sharing():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert not sd["fc1.weight"].requires_grad
    assert b.load_state_dict(sd).__repr__() == "<All keys matched successfully>"
    for (_, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert p.tolist() == q.tolist() and p is not q
    assert a.state_dict(keep_vars=True)["fc1.weight"] is a.fc1.weight


def test_load_state_dict_errors_use_pytorch_wording():
    net, ref = Net(), TorchNet()
    sd = {k: v for k, v in net.state_dict().items() if k != "fc1.bias"}
    sd["fc2.weight"] = tg.zeros(3, 9)
    sd["junk"] = tg.zeros(1)
    tsd = {k: torch.tensor(v.numpy()) for k, v in sd.items()}
    with pytest.raises(RuntimeError) as ours:
        net.load_state_dict(sd)
    with pytest.raises(RuntimeError) as theirs:
        ref.load_state_dict(tsd)
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "tracegrad.Size").replace(
        "TorchNet", "Net")
    assert str(ours.value).startswith("Error(s) in loading state_dict for Net:\n\tMissing key(s) in "
                                      'state_dict: "fc1.bias". \n\tUnexpected key(s) in state_dict: "junk". ')
    # shape mismatches raise even when not strict
    with pytest.raises(RuntimeError, match=re.escape(
            "size mismatch for fc2.weight: copying a param with shape tracegrad.Size([3, 9]) from "
            "checkpoint, the shape in current model is tracegrad.Size([3, 8]).")):
        net.load_state_dict(sd, strict=False)
    sd["fc2.weight"] = tg.zeros(3, 8)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["junk"]
    with pytest.raises(TypeError, match="dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_assign_and_dtype_cast():
    lin = nn.Linear(2, 2)
    w = tg.zeros(2, 2, dtype=tg.float64)
    lin.load_state_dict({"weight": w, "bias": tg.ones(2)})
    assert lin.weight.dtype is tg.float32 and lin.weight.tolist() == [[0.0, 0.0]] * 2
    old = lin.weight
    lin.load_state_dict({"weight": tg.ones(2, 2), "bias": tg.ones(2)}, assign=True)
    assert lin.weight is not old and isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad


def test_module_to_dtype():
    net = Net().double()
    assert all(p.dtype is tg.float64 for p in net.parameters())
    assert net(tg.ones(2, 4, dtype=tg.float64)).dtype is tg.float64


# ----------------------------------------------------------------------------- repr
def _zoo(lib):
    return lib.Sequential(
        lib.Conv2d(1, 8, 3, padding=1), lib.ReLU(), lib.MaxPool2d(2),
        lib.Conv2d(8, 8, (3, 5), stride=2, dilation=2, groups=2, bias=False), lib.Flatten(),
        lib.Linear(64, 128), lib.LayerNorm(128), lib.GELU(approximate="tanh"), lib.Dropout(0.1),
        lib.Sigmoid(), lib.Tanh(), lib.Identity(), lib.Embedding(10, 3, padding_idx=0),
        lib.Sequential(lib.Linear(2, 2), lib.Conv2d(1, 1, 3, padding="same")),
        lib.ModuleList([lib.ReLU(), lib.ReLU(), lib.Linear(1, 1)]),
        lib.MSELoss(), lib.CrossEntropyLoss(), lib.BCEWithLogitsLoss(), lib.Softmax(dim=1))


def test_repr_matches_pytorch():
    assert repr(_zoo(nn)) == repr(_zoo(torch.nn))
    assert repr(nn.Linear(64, 128)) == "Linear(in_features=64, out_features=128, bias=True)"


# ----------------------------------------------------------------------------- containers
def test_sequential_indexing():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[1], nn.ReLU)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    seq.append(nn.Sigmoid())
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    del seq[1]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    seq[2] = nn.Tanh()
    assert isinstance(seq[2], nn.Tanh)
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict([("enc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named.state_dict()) == ["enc.weight", "enc.bias"] and named.act is named[1]


def test_module_list():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.ReLU())
    assert len(ml) == 4 and isinstance(ml[-1], nn.ReLU) and len(ml[1:]) == 3
    assert len(list(ml.parameters())) == 6
    holder = nn.Module()
    holder.layers = ml
    assert "layers.2.bias" in holder.state_dict()


# ----------------------------------------------------------------------------- layers vs torch
@pytest.mark.parametrize("make", [
    lambda lib: lib.Linear(5, 3),
    lambda lib: lib.Linear(5, 3, bias=False),
    lambda lib: lib.Conv2d(3, 4, 3),
    lambda lib: lib.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
    lambda lib: lib.Conv2d(3, 2, 3, padding="same", bias=False),
    lambda lib: lib.LayerNorm(7),
    lambda lib: lib.LayerNorm((6, 7), elementwise_affine=False),
    lambda lib: lib.GELU(), lambda lib: lib.GELU(approximate="tanh"), lambda lib: lib.ReLU(),
    lambda lib: lib.Tanh(), lambda lib: lib.Sigmoid(), lambda lib: lib.Flatten(),
    lambda lib: lib.Identity(), lambda lib: lib.MaxPool2d(2), lambda lib: lib.MaxPool2d(3, 2, 1),
    lambda lib: lib.Dropout(0.0), lambda lib: lib.Softmax(dim=-1), lambda lib: lib.LogSoftmax(1),
], ids=["linear", "linear_nobias", "conv", "conv_grouped", "conv_same", "layernorm",
        "layernorm_noaffine", "gelu", "gelu_tanh", "relu", "tanh", "sigmoid", "flatten",
        "identity", "maxpool", "maxpool_pad", "dropout0", "softmax", "logsoftmax"])
def test_layer_forward_backward_matches_torch(make):
    ref = make(torch.nn)
    mod = from_torch(make(nn), ref)
    shape = {"Linear": (2, 5), "LayerNorm": (2, 3, 6, 7)}.get(type(ref).__name__, (2, 4, 6, 7))
    if type(ref).__name__ == "Conv2d":
        shape = (2, ref.in_channels, 6, 7)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tx = torch.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    tout, gout = ref(tx), mod(gx)
    close(gout, tout, rtol=1e-5, atol=1e-5)
    w = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
    (tout * torch.tensor(w)).sum().backward()
    (gout * tg.tensor(w)).sum().backward()
    close(gx.grad, tx.grad, rtol=1e-4, atol=1e-5)
    for (name, p), (_, q) in zip(mod.named_parameters(), ref.named_parameters()):
        close(p.grad, q.grad, rtol=1e-4, atol=1e-4)


def test_embedding_matches_torch_and_padding_row():
    ref = torch.nn.Embedding(10, 4, padding_idx=2)
    mod = from_torch(nn.Embedding(10, 4, padding_idx=2), ref)
    fresh = nn.Embedding(10, 4, padding_idx=-1)
    assert fresh.padding_idx == 9 and fresh.weight[9].tolist() == [0.0] * 4
    idx = [[1, 2, 2], [9, 1, 0]]
    tout, gout = ref(torch.tensor(idx)), mod(tg.tensor(idx))
    close(gout, tout)
    tout.pow(2).sum().backward()
    gout.pow(2).sum().backward()
    close(mod.weight.grad, ref.weight.grad)
    assert mod.weight.grad[2].tolist() == [0.0] * 4
    assert repr(mod) == "Embedding(10, 4, padding_idx=2)"
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(reduction):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 5)).astype(np.float32)
    target = np.array([0, 4, 2, 1, 1, 3])
    bin_target = (rng.random((6, 5)) > 0.5).astype(np.float32)
    weight = rng.random(5).astype(np.float32) + 0.5
    cases = [
        (lambda lib, **kw: lib.MSELoss(**kw), logits, bin_target, {}),
        (lambda lib, **kw: lib.CrossEntropyLoss(**kw), logits, target, {}),
        (lambda lib, **kw: lib.CrossEntropyLoss(**kw), logits, target,
         {"weight": weight, "ignore_index": 1, "label_smoothing": 0.1}),
        (lambda lib, **kw: lib.BCEWithLogitsLoss(**kw), logits, bin_target, {"pos_weight": weight}),
    ]
    for make, x, y, opts in cases:
        t_opts = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in opts.items()}
        g_opts = {k: tg.tensor(v) if isinstance(v, np.ndarray) else v for k, v in opts.items()}
        tx, gx = torch.tensor(x, requires_grad=True), tg.tensor(x, requires_grad=True)
        tl = make(torch.nn, reduction=reduction, **t_opts)(tx, torch.tensor(y))
        gl = make(nn, reduction=reduction, **g_opts)(gx, tg.tensor(y))
        close(gl, tl, rtol=1e-5, atol=1e-6)
        tl.sum().backward()
        gl.sum().backward()
        close(gx.grad, tx.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


def test_loss_weights_are_buffers():
    loss = nn.CrossEntropyLoss(weight=tg.ones(3))
    assert list(loss.state_dict()) == list(torch.nn.CrossEntropyLoss(weight=torch.ones(3)).state_dict())


# ----------------------------------------------------------------------------- dropout
def test_dropout_train_eval_and_seed():
    drop = nn.Dropout(0.25)
    x = tg.ones(200, 100)
    tg.manual_seed(3)
    a = drop(x)
    tg.manual_seed(3)
    b = drop(x)
    assert a.tolist() == b.tolist()
    vals = a.numpy()
    assert set(np.unique(vals)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((vals == 0).mean() - 0.25) < 0.02
    assert drop.eval()(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    xr = tg.ones(4, requires_grad=True)
    nn.Dropout(0.5)(xr).sum().backward()
    assert set(xr.grad.tolist()) <= {0.0, 2.0}


# ----------------------------------------------------------------------------- initialisation
def test_default_initialisation_follows_pytorch():
    tg.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound  # uniform(-bound, bound)
    assert np.abs(b).max() <= bound and b.std() > 0.4 * bound
    conv = nn.Conv2d(16, 32, 3)
    cbound = 1 / math.sqrt(16 * 9)
    cw = conv.weight.detach().numpy()
    assert np.abs(cw).max() <= cbound and abs(cw.std() - cbound / math.sqrt(3)) < 0.05 * cbound
    assert np.abs(conv.bias.detach().numpy()).max() <= cbound
    emb = nn.Embedding(500, 64).weight.detach().numpy()
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    ln = nn.LayerNorm(5)
    assert ln.weight.tolist() == [1.0] * 5 and ln.bias.tolist() == [0.0] * 5
    tg.manual_seed(0)
    again = nn.Linear(400, 300)
    assert np.array_equal(again.weight.detach().numpy(), w)


def test_init_functions():
    for name in ["linear", "conv2d", "sigmoid", "tanh", "relu", "selu"]:
        assert nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2))
    w = tg.empty(300, 200)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 300)) < 0.02 * math.sqrt(2 / 300)
    nn.init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 500)
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5
    nn.init.constant_(w, 0.3)
    assert np.all(w.numpy() == np.float32(0.3))
    p = nn.Parameter(tg.ones(3, 3))
    nn.init.zeros_(p)  # in place on a parameter: no autograd history
    assert p.is_leaf and p.tolist() == [[0.0] * 3] * 3
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.kaiming_uniform_(tg.empty(3))


@pytest.mark.parametrize("shape, groups", [((4, 2, 3), 1), ((6, 3, 3, 3), 3), ((2, 3, 1, 2, 3), 2)])
def test_dirac_matches_torch(shape, groups):
    ours = nn.init.dirac_(tg.empty(*shape), groups)
    theirs = torch.nn.init.dirac_(torch.empty(*shape), groups)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = np.random.default_rng(0).standard_normal((1, shape[1]) + (5,) * (len(shape) - 2))
    if len(shape) == 4 and groups == 1:  # (a Dirac-initialised conv passes its input through)
        conv = nn.Conv2d(shape[1], shape[0], 3, padding=1, bias=False)
        nn.init.dirac_(conv.weight)
        np.testing.assert_allclose(conv(tg.tensor(x, dtype=tg.float32)).numpy()[:, :shape[1]], x, rtol=1e-6)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.init.dirac_(tg.empty(5, 2, 3), groups=2)


def test_sparse_init_and_deprecated_aliases():
    w = nn.init.sparse_(tg.empty(10, 6), sparsity=0.3, std=0.5)
    assert ((w.numpy() == 0).sum(0) >= 3).all()
    with pytest.warns(FutureWarning, match="nn.init.normal_"):
        nn.init.normal(w)
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(tg.empty(3), 0.1)


def test_deepcopy_and_pickle_keep_parameters():
    import pickle

    model = nn.Sequential(nn.Linear(2, 3), nn.LayerNorm(3))
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert repr(clone) == repr(model)
        for (name, p), (_, q) in zip(model.named_parameters(), clone.named_parameters()):
            assert isinstance(q, nn.Parameter) and q.requires_grad and q is not p
            assert q.tolist() == p.tolist()


def test_module_compile_in_place_get_parameter_and_copies():
    """``module.compile()`` (torch.nn.Module.compile): calls run the compiled forward with
    hooks around it; copies and pickles compile their own; get_parameter/get_buffer by path."""
    import copy
    import pickle

    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(2, 3), tg.nn.BatchNorm1d(3), tg.nn.Tanh())
    assert model.get_parameter("0.weight") is model[0].weight
    assert model.get_buffer("1.running_mean") is model[1].running_mean
    with pytest.raises(AttributeError, match="no parameter `nope`"):
        model.get_parameter("0.nope")
    model.eval()
    x = tg.randn(4, 2)
    want = model(x).detach().numpy()
    seen = []
    hook = model.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    model.compile(backend="c", fullgraph=True)
    np.testing.assert_allclose(model(x).detach().numpy(), want, rtol=1e-6, atol=1e-6)
    assert len(model._compiled_forward.programs) == 1 and seen == [(4, 3)]
    hook.remove()  # (a lambda does not pickle)
    model(x).sum().backward()
    assert model[0].weight.grad is not None
    twin = copy.deepcopy(model)
    with tg.no_grad():
        twin[0].weight.add_(1.0)
    assert not np.allclose(twin(x).detach().numpy(), want)  # its own program, its own weights
    np.testing.assert_allclose(model(x).detach().numpy(), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(model))(x).detach().numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("cls, shape", [("InstanceNorm1d", (4, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 4))])
def test_instance_norm_running_statistics_match_torch(cls, shape):
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal(shape) * (k + 1) + k for k in range(3)]
    results = []
    for lib in (tg, torch):
        m = getattr(lib.nn, cls)(3, track_running_stats=True, affine=True, momentum=0.2).double()
        outs = []
        for b in batches:  # training: the sample's own statistics; the running ones move
            x = lib.tensor(b, requires_grad=True)
            y = m(x)
            (y * lib.tensor(np.linspace(-1, 1, y.numel()).reshape(shape))).sum().backward()
            outs += [y.detach().numpy(), x.grad.numpy()]
        m.eval()
        outs.append(m(lib.tensor(batches[0])).detach().numpy())  # eval: the running statistics
        outs += [m.running_mean.numpy(), m.running_var.numpy()]
        results.append((outs, sorted(m.state_dict()), repr(m)))
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert results[0][1:] == results[1][1:]


def test_instance_norm_running_statistics_update_in_a_compiled_step():
    states = []
    for compiled in (False, True):
        m = nn.InstanceNorm1d(3, track_running_stats=True)
        step = tg.compile(lambda x: m(x).sum(), fullgraph=True) if compiled else (lambda x: m(x).sum())
        for k in range(3):
            step(tg.tensor(np.full((2, 3, 4), float(k)) + np.arange(4.0), dtype=tg.float32))
        states.append((m.running_mean.numpy().copy(), m.running_var.numpy().copy()))
    for a, b in zip(*states):
        np.testing.assert_allclose(a, b, rtol=1e-6)
