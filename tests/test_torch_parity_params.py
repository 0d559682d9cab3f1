"""Parameters added for PyTorch's call signatures do what PyTorch's do: tg.compile(mode=,
disable=), from_dlpack(copy=), norm(out=, dtype=), tensordot(out=), save/load's pickle
parameters (accepted; nothing is pickled), backward(grad_variables=)."""
import numpy as np
import pytest

import tracegrad as tg


def test_compile_modes_and_disable():
    f = lambda x: (x * 2).sum()
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        compiled = tg.compile(f, mode=mode)
        assert float(compiled(tg.ones(3))) == 6.0 and len(compiled.programs) == 1
    assert tg.compile(f, disable=True) is f
    assert tg.compile(disable=True)(f) is f
    with pytest.raises(RuntimeError, match="Unrecognized mode=fastest"):
        tg.compile(f, mode="fastest")


def test_from_dlpack_copy_and_device():
    a = np.arange(3.0)
    shared, copied = tg.from_dlpack(a), tg.from_dlpack(a, copy=True)
    a[0] = 7.0
    assert shared[0].item() == 7.0 and copied[0].item() == 0.0
    with pytest.raises(RuntimeError, match="host memory"):
        tg.from_dlpack(a, device="cuda")


def test_out_and_dtype_parameters_write_and_convert():
    x = tg.tensor([3.0, 4.0])
    out = tg.empty(0)
    assert tg.norm(x, out=out) is out and out.item() == 5.0 and out.shape == ()
    assert tg.norm(tg.tensor([3.0, 4.0]), dtype=tg.float64).dtype == tg.float64  # (an int input raises, as torch's)
    a, b = tg.ones(2, 3), tg.ones(3, 4)
    res = tg.empty(2, 4)
    assert tg.tensordot(a, b, 1, out=res) is res
    np.testing.assert_array_equal(res.numpy(), np.full((2, 4), 3.0))
    m = tg.empty(1)
    assert tg.chain_matmul(a, b, out=m) is m and m.shape == (2, 4)


def test_save_load_accept_pytorchs_pickle_parameters(tmp_path):
    import pickle

    path = tmp_path / "t.pt"
    tg.save({"w": tg.ones(2)}, path, pickle_module=pickle, pickle_protocol=4)
    back = tg.load(path, map_location="cpu", weights_only=True, mmap=False)
    np.testing.assert_array_equal(back["w"].numpy(), [1.0, 1.0])


def test_backward_grad_variables_is_the_deprecated_grad_tensors():
    x = tg.ones(2, requires_grad=True)
    with pytest.warns(FutureWarning, match="grad_variables"):
        tg.autograd.backward([x * 3], grad_variables=[tg.tensor([1.0, 2.0])])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="both passed"):
        tg.autograd.backward([x * 3], grad_tensors=[tg.ones(2)], grad_variables=[tg.ones(2)])
    x.grad = None
    (x * 2).sum().backward(inputs=[x])  # inputs still reaches the engine by name
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
