"""Checkpoints: tg.save/tg.load and tg.save_checkpoint/tg.load_checkpoint round trips (npz,
JSON options, no pickling), resuming training exactly, and clear errors."""
import io
import json
import os
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.nn as nn


def make_model():
    tg.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))


def train(model, opt, steps, seed):
    rng = np.random.default_rng(seed)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        x = tg.tensor(rng.standard_normal((16, 4)).astype(np.float32))
        y = tg.tensor(rng.integers(0, 3, 16))
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_save_load_tree_roundtrip(tmp_path):
    tree = {
        "sd": OrderedDict([("w", tg.ones(2, 3)), ("b", tg.tensor([1, 2], dtype=tg.int32))]),
        "flags": tg.tensor([True, False]),
        "scalar": tg.tensor(2.5, dtype=tg.float64),
        "array": np.arange(4.0),
        3: ("tuple", 1, 2.5, None, [True, {"nested": np.float32(1.5)}]),
        "nan": float("nan"),
    }
    path = tmp_path / "tree.pt"
    tg.save(tree, path)
    assert os.path.exists(path) and not os.path.exists(str(path) + ".npz")  # no suffix added
    back = tg.load(path)
    assert isinstance(back["sd"], OrderedDict) and list(back["sd"]) == ["w", "b"]
    assert back["sd"]["w"].tolist() == [[1.0] * 3] * 2 and back["sd"]["b"].dtype is tg.int32
    assert back["flags"].dtype is tg.bool and back["scalar"].shape == () and back["scalar"].dtype is tg.float64
    assert isinstance(back["array"], np.ndarray) and back["array"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert back[3] == ("tuple", 1, 2.5, None, [True, {"nested": 1.5}])
    assert np.isnan(back["nan"])


def test_file_objects_and_no_pickle(tmp_path):
    buf = io.BytesIO()
    tg.save({"x": tg.arange(3)}, buf)
    buf.seek(0)
    assert tg.load(buf)["x"].tolist() == [0, 1, 2]
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as archive:  # plain data only
        tree = json.loads(str(archive["__tree__"]))
        assert tree["format"] == "tracegrad-npz" and all(archive[k].dtype != object for k in archive.files)
    with pytest.raises(TypeError, match="cannot save a function"):
        tg.save({"f": lambda: 1}, tmp_path / "bad.npz")
    with pytest.raises(TypeError, match="object arrays cannot be saved"):
        tg.save(np.array([{}], dtype=object), tmp_path / "bad.npz")
    assert not os.path.exists(tmp_path / "bad.npz")
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    with pytest.raises(ValueError, match="not a tracegrad file"):
        tg.load(tmp_path / "plain.npz")
    with pytest.raises(ValueError, match="map_location"):
        tg.load(tmp_path / "plain.npz", map_location="cuda")


def test_state_dict_via_save_load(tmp_path):
    model = make_model()
    tg.save(model.state_dict(), tmp_path / "model.npz")
    other = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
    other.load_state_dict(tg.load(tmp_path / "model.npz"))
    for p, q in zip(model.parameters(), other.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize("make_opt", [
    lambda ps: tg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: tg.optim.Adam(ps, lr=0.01, betas=(0.8, 0.95), amsgrad=True),
    lambda ps: tg.optim.AdamW(ps, lr=0.01),
], ids=["sgd", "adam", "adamw"])
def test_checkpoint_resume_is_exact(tmp_path, make_opt):
    model = make_model()
    opt = make_opt(model.parameters())
    train(model, opt, 3, seed=0)
    path = tmp_path / "ckpt.npz"
    tg.save_checkpoint(path, model, opt, epoch=3, history=tg.tensor([1.0, 2.0]), note="warm")
    expected = train(model, opt, 3, seed=1)

    model2 = make_model()  # fresh weights, fresh optimizer state
    opt2 = make_opt(model2.parameters())
    opt2.param_groups[0]["lr"] = 123.0  # overwritten by the checkpoint's options
    ckpt = tg.load_checkpoint(path, model2, opt2)
    assert ckpt["epoch"] == 3 and ckpt["note"] == "warm" and ckpt["history"].tolist() == [1.0, 2.0]
    assert set(ckpt) == {"epoch", "history", "note", "model", "optimizer"}
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert opt2.param_groups[0].get("betas") == opt.param_groups[0].get("betas")  # a tuple again
    assert train(model2, opt2, 3, seed=1) == expected
    for p, q in zip(model.parameters(), model2.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())


def test_checkpoint_errors(tmp_path):
    model = make_model()
    path = tmp_path / "only_model.npz"
    tg.save_checkpoint(path, model)
    with pytest.raises(ValueError, match="holds no optimizer state"):
        tg.load_checkpoint(path, optimizer=tg.optim.SGD(model.parameters(), lr=0.1))
    tg.save_checkpoint(path, model, tg.optim.Adam(model.parameters()))
    with pytest.raises(ValueError, match="holds Adam state, but the optimizer is SGD"):
        tg.load_checkpoint(path, optimizer=tg.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(RuntimeError, match="Missing key"):
        tg.load_checkpoint(path, nn.Sequential(nn.Linear(4, 8)).append(nn.Linear(8, 1)).append(nn.Linear(1, 1)))
    result = tg.load_checkpoint(path, nn.Sequential(nn.Linear(4, 8)), strict=False)
    assert list(result["model"])[:2] == ["0.weight", "0.bias"]
    tg.save({"x": 1}, path)
    with pytest.raises(ValueError, match="was not written by tg.save_checkpoint"):
        tg.load_checkpoint(path)
