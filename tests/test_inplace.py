"""In-place operations and autograd, against PyTorch: version counters, the check that a saved
tensor was not modified, in-place on leaves, and view + in-place programs whose graph must be
rebased (values and gradients compared with PyTorch)."""
import pytest

from autograd_oracle import raises_both, run_both

torch = pytest.importorskip("torch")


def leaf(lib, values):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True)


def const(lib, values):
    return lib.tensor(values, dtype=lib.float64)


# ----------------------------------------------------------------------------- versions
def test_version_counter_shared_by_views():
    def prog(lib):
        a = lib.zeros(2, 3, dtype=lib.float64)
        v = a[0]
        t = a.t()
        versions = [a._version]
        a.add_(1)
        versions.append((a._version, v._version, t._version))
        v.mul_(2)
        versions.append((a._version, v._version, t._version))
        t[1, 1] = 5.0
        versions.append((a._version, v._version, t._version))
        return versions, a

    run_both(prog, torch)


# ----------------------------------------------------------------------------- saved tensor checks
@pytest.mark.parametrize("name,prog,match", [
    ("input of mul", lambda lib: _modify_input(lib, lambda a, w: a * w),
     # PyTorch names the saved tensor's grad_fn at the time of the error: the add_
     r"\[\w+\.DoubleTensor \[3\]\], which is output 0 of Add\w*, is at version 1; expected "
     r"version 0 instead"),
    ("output of exp", lambda lib: _modify_output(lib, lambda a: a.exp()),
     r"\[\w+\.DoubleTensor \[3\]\], which is output 0 of Exp\w*, is at version 1; expected "
     r"version 0 instead"),
    ("output of tanh", lambda lib: _modify_output(lib, lambda a: a.tanh()),
     r"output 0 of Tanh\w*, is at version 1; expected version 0 instead"),
    ("leaf saved", lambda lib: _modify_leaf(lib),
     r"\[\w+\.DoubleTensor \[3\]\] is at version 1; expected version 0 instead"),
])
def test_modified_saved_tensor_raises(name, prog, match):
    ours, theirs = raises_both(prog, torch, match="one of the variables needed for gradient "
                                                  "computation has been modified by an inplace "
                                                  "operation")
    import re

    assert re.search(match, theirs), theirs
    assert re.search(match, ours), ours


def _modify_input(lib, f):
    x = leaf(lib, [1.0, 2.0, 3.0])
    a = x * 1
    w = leaf(lib, [1.0, 1.0, 1.0])
    y = f(a, w)
    a.add_(1)
    y.sum().backward()


def _modify_output(lib, f):
    x = leaf(lib, [1.0, 2.0, 3.0])
    y = f(x * 1)
    y.add_(1)
    y.sum().backward()


def _modify_leaf(lib):
    x = leaf(lib, [1.0, 2.0, 3.0])
    y = x.sin()
    with lib.no_grad():
        x.add_(1)
    y.sum().backward()


def test_modification_after_backward_is_fine_and_unsaved_inputs_may_change():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        a = x * 1
        y = a + 3  # add saves nothing
        a.mul_(10)
        y.sum().backward()
        return x.grad, a

    run_both(prog, torch)


def test_in_place_on_leaf_and_view_of_leaf_errors():
    raises_both(lambda lib: leaf(lib, [1.0]).add_(1), torch,
                match="a leaf Variable that requires grad is being used in an in-place operation.")
    raises_both(lambda lib: leaf(lib, [1.0, 2.0])[0].mul_(2), torch,
                match="a view of a leaf Variable that requires grad is being used in an in-place")

    def setitem(lib):
        x = leaf(lib, [1.0, 2.0])
        x[0] = 3.0

    raises_both(setitem, torch, match="leaf Variable that requires grad")


# ----------------------------------------------------------------------------- in-place chains
def test_in_place_chain_on_non_leaf():
    def prog(lib):
        x = leaf(lib, [0.5, -1.0, 2.0])
        y = x * 2
        y.mul_(x)
        y.add_(3)
        y.sub_(x, alpha=2)
        y.div_(2)
        y.clamp_(-1.0, 4.0)
        y.tanh_()
        y.sum().backward()
        return y, x.grad, y._version, y.grad_fn.name()

    run_both(prog, torch)


def test_in_place_with_other_requiring_grad():
    def prog(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, -1.0])
        y = lib.zeros(2, dtype=lib.float64)
        y.add_(x * w)
        y.mul_(w)
        (y * y).sum().backward()
        return y, x.grad, w.grad, y.requires_grad

    run_both(prog, torch)


def test_copy_and_fill_into_non_leaf():
    def prog(lib):
        x, w = leaf(lib, [1.0, 2.0, 3.0]), leaf(lib, [4.0, 5.0, 6.0])
        y = x * 2
        y.copy_(w * w)
        z = x * 3
        z[1:].fill_(0.5)
        (y.sum() + (z * z).sum()).backward()
        return y, z, x.grad, w.grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- view + in-place
VIEW_PROGRAMS = {
    "setitem_row": lambda lib, x, z: _setitem_row(lib, x, z),
    "slice_mul": lambda lib, x, z: _slice_mul(lib, x, z),
    "transpose_view": lambda lib, x, z: _transpose_view(lib, x, z),
    "chained_views": lambda lib, x, z: _chained_views(lib, x, z),
    "view_then_base_modified": lambda lib, x, z: _view_sees_base_update(lib, x, z),
    "reshape_view_add": lambda lib, x, z: _reshape_view_add(lib, x, z),
    "two_views_one_write": lambda lib, x, z: _two_views(lib, x, z),
    "mask_setitem": lambda lib, x, z: _mask_setitem(lib, x, z),
    "view_saved_then_base_written": lambda lib, x, z: _unsqueeze_write(lib, x, z),
}


def _setitem_row(lib, x, z):
    y = x.clone()
    y[0] = z[0] * 2
    return (y * y).sum(), y


def _slice_mul(lib, x, z):
    y = x * 1
    v = y[:, 1:]
    v.mul_(z[:, 1:])
    return (y ** 2).sum() + v.sum(), y


def _transpose_view(lib, x, z):
    y = x.sin()
    y.t().mul_(z.t())
    return (y * x).sum(), y


def _chained_views(lib, x, z):
    y = x * 1
    y[1][0:2].add_(z[0, :2] * 5)
    return (y.sin()).sum(), y


def _view_sees_base_update(lib, x, z):
    b = x * 1
    v = b[0]
    b.mul_(z)
    return (v * v).sum() + b.sum(), v


def _reshape_view_add(lib, x, z):
    y = x * 1
    v = y.view(-1)
    v[1:4].add_(z.view(-1)[:3])
    return (y.cos()).sum(), y


def _two_views(lib, x, z):
    y = x.clone()
    a, b = y[0], y[:, 0]
    a.mul_(z[1])
    return (b * b).sum() + (y * z).sum(), b


def _mask_setitem(lib, x, z):
    y = x * 2
    y[x > 0.2] = 0.0
    y[0, 0] = z[1, 1]
    return (y * z).sum(), y


def _unsqueeze_write(lib, x, z):
    y = x * 1
    u = y.unsqueeze(0)
    s = u.sum()  # sum saves nothing that the write invalidates
    u[0, 1].mul_(z[1])
    return s + (y * y).sum(), y


@pytest.mark.parametrize("name", sorted(VIEW_PROGRAMS))
def test_view_in_place_gradients_match_torch(name):
    def prog(lib):
        x = leaf(lib, [[0.1, 0.5, -0.3], [0.7, -0.2, 0.9]])
        z = leaf(lib, [[1.5, -2.0, 0.5], [0.25, 3.0, -1.0]])
        loss, probe = VIEW_PROGRAMS[name](lib, x, z)
        loss.backward()
        return loss, probe, x.grad, z.grad

    run_both(prog, torch)


def test_view_in_place_double_backward():
    def prog(lib):
        x = leaf(lib, [0.3, -0.6, 1.2])
        y = x * x
        y[1:].mul_(x[:2])
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        return g, x.grad

    run_both(prog, torch)
