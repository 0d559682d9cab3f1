"""The backward engine against PyTorch: backward/grad options, several roots, accumulation and
the .grad layout, retain_grad, tensor and node hooks, the graph's Node interface, saved
values as attributes, requires_grad rules, detach."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from autograd_oracle import graph_names, node_name, raises_both, run_both

torch = pytest.importorskip("torch")


def leaf(lib, values, dtype="float64"):
    return lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)


def const(lib, values, dtype="float64"):
    return lib.tensor(values, dtype=getattr(lib, dtype))


# ----------------------------------------------------------------------------- backward / grad
def test_backward_with_gradient_and_accumulation():
    def prog(lib):
        x = leaf(lib, [[1.0, -2.0], [0.5, 3.0]])
        y = (x * x).tanh() + x
        y.backward(const(lib, [[1.0, 2.0], [3.0, 4.0]]))
        first = x.grad.clone()
        (x.sin() * 2).sum().backward()
        return first, x.grad

    run_both(prog, torch)


def test_grad_with_grad_outputs_and_several_outputs():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        w = leaf(lib, [0.5, -1.0, 2.0])
        a = x * w
        b = (x ** 2).sum()
        ga = const(lib, [1.0, 0.0, -1.0])
        res = lib.autograd.grad([a, b], [x, w], grad_outputs=[ga, None])
        return res, x.grad is None

    run_both(prog, torch)


def test_several_roots_with_autograd_backward():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y1 = x * 3
        y2 = (x * x).sum()
        lib.autograd.backward([y1, y2], [const(lib, [1.0, 1.0]), None])
        return x.grad

    run_both(prog, torch)


def test_shared_subexpressions_diamond():
    def prog(lib):
        x = leaf(lib, [0.3, -0.7])
        h = x.exp()
        a, b = h * 2, h.sin()
        ((a * b) + h).sum().backward()
        return x.grad

    run_both(prog, torch)


def test_retain_graph():
    def second_backward(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * x).sum()
        y.backward()
        y.backward()

    raises_both(second_backward, torch, match="Specify retain_graph=True")

    def retained(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad

    run_both(retained, torch)

    def grad_frees_too(lib):
        x = leaf(lib, [1.0, 2.0])
        y = (x.exp()).sum()
        lib.autograd.grad(y, x)
        lib.autograd.grad(y, x)

    raises_both(grad_frees_too, torch, match="Specify retain_graph=True")

    def saved_attribute_after_free(lib):
        x = leaf(lib, [1.0])
        b = x.exp()
        b.sum().backward()
        return b.grad_fn._saved_result

    raises_both(saved_attribute_after_free, torch, match="after they have already been freed")


def test_create_graph_higher_order():
    def prog(lib):
        x = leaf(lib, [0.5, -1.5, 2.0])
        y = (x ** 3 * x.sin()).sum()
        (g1,) = lib.autograd.grad(y, x, create_graph=True)
        (g2,) = lib.autograd.grad(g1.sum(), x, create_graph=True)
        (g3,) = lib.autograd.grad(g2.sum(), x, create_graph=True)
        g3.sum().backward()
        return g1, g2, g3, x.grad

    run_both(prog, torch)


def test_backward_create_graph_makes_grad_with_history():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x ** 3).sum().backward(create_graph=True)
        g = x.grad
        facts = (g.requires_grad, g.grad_fn is not None)
        x.grad = None
        g.sum().backward()
        return facts, g, x.grad

    run_both(prog, torch)


def test_allow_unused_and_materialize_grads():
    def unused(lib):
        x, z = leaf(lib, [1.0]), leaf(lib, [2.0])
        lib.autograd.grad((x * 2).sum(), [x, z])

    raises_both(unused, torch, match="appears to not have been used in the graph. Set "
                                     "allow_unused=True")

    def allowed(lib):
        x, z = leaf(lib, [1.0]), leaf(lib, [2.0])
        a = lib.autograd.grad((x * 2).sum(), [x, z], allow_unused=True, retain_graph=True)
        y = (x * 2).sum()
        m = lib.autograd.grad(y, [x, z], materialize_grads=True, retain_graph=True)
        m2 = lib.autograd.grad(y, [x, z], materialize_grads=True, create_graph=True)
        return a, m, m2

    run_both(allowed, torch)

    def contradicting(lib):
        x = leaf(lib, [1.0])
        lib.autograd.grad(x * 2, x, materialize_grads=True, allow_unused=False)

    raises_both(contradicting, torch, ValueError, "Expected allow_unused to be True")


def test_backward_inputs_leaves_and_non_leaves():
    def prog(lib):
        x, w = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        h = x * w
        y = (h.exp() * x).sum()
        y.backward(inputs=[x], retain_graph=True)
        gx, gw = x.grad, w.grad
        y.backward(inputs=[h])
        return gx, gw, h.grad, h.retains_grad, x.grad

    run_both(prog, torch)

    raises_both(lambda lib: (leaf(lib, [1.0]) * 2).sum().backward(inputs=[]), torch,
                match="`inputs` argument to `backward\\(\\)` cannot be empty")
    raises_both(lambda lib: (leaf(lib, [1.0]) * 2).sum().backward(inputs=[lib.ones(1)]), torch,
                match="can't retain_grad on Tensor that has requires_grad=False")


def test_grad_with_respect_to_non_leaf_and_output_itself():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 3
        y = (h * h).sum()
        (gh,) = lib.autograd.grad(y, h, retain_graph=True)
        (gy,) = lib.autograd.grad(y, y)
        return gh, gy, x.grad is None

    run_both(prog, torch)


def test_is_grads_batched():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x ** 2
        eye = lib.eye(3, dtype=lib.float64)
        return lib.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)

    run_both(prog, torch)


@pytest.mark.parametrize("prog,exc,match", [
    (lambda lib: (leaf(lib, [1.0, 2.0]) * 2).backward(), RuntimeError,
     "grad can be implicitly created only for scalar outputs"),
    (lambda lib: (leaf(lib, [1.0]) > 0).sum().backward(), RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    (lambda lib: lib.ones(1).sum().backward(), RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    (lambda lib: (leaf(lib, [1.0, 2.0]) * 2).backward(lib.ones(3, dtype=lib.float64)),
     RuntimeError, r"Mismatch in shape: grad_output\[0\] has a shape of \w+.Size\(\[3\]\) and "
                   r"output\[0\] has a shape of \w+.Size\(\[2\]\)"),
    (lambda lib: lib.autograd.grad((leaf(lib, [1.0]) * 2).sum(), lib.ones(1)), RuntimeError,
     "One of the differentiated Tensors does not require grad"),
    (lambda lib: lib.autograd.backward([(leaf(lib, [1.0]) * 2).sum()], [3]), TypeError,
     "gradients can be either Tensors or None, but got int"),
])
def test_engine_argument_errors(prog, exc, match):
    raises_both(prog, torch, exc, match)


def test_grad_output_dtype_is_cast():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        return lib.autograd.grad(x * 2, x, grad_outputs=lib.ones(2, dtype=lib.float32))

    run_both(prog, torch)


# ----------------------------------------------------------------------------- .grad layout
def test_accumulation_is_in_place_and_keeps_the_grad_object():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        x.grad = lib.zeros(2, dtype=lib.float64)
        g0 = x.grad
        (x * 2).sum().backward()
        same_after_first = x.grad is g0
        (x * 3).sum().backward()
        return same_after_first, x.grad is g0, g0

    run_both(prog, torch)


def test_first_grad_is_not_an_alias_of_a_visible_tensor():
    def prog(lib):
        x, y = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        g = const(lib, [1.0, 1.0])
        (x + y).backward(g)
        facts = (x.grad is g, x.grad.data_ptr() == g.data_ptr(),
                 x.grad.data_ptr() == y.grad.data_ptr())
        (x + y).backward(g)  # in-place accumulation must not leak into g or into y.grad
        return facts, g, x.grad, y.grad

    run_both(prog, torch)


def test_zeroing_and_resetting_grads():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        (x * x).sum().backward()
        x.grad.zero_()
        (x * x).sum().backward()
        a = x.grad.clone()
        x.grad = None
        (x * 5).sum().backward()
        return a, x.grad

    run_both(prog, torch)


def test_grad_setter_checks():
    raises_both(lambda lib: setattr(leaf(lib, [1.0, 2.0]), "grad", lib.ones(3, dtype=lib.float64)),
                torch, match=r"attempting to assign a gradient of size '\[3\]' to a tensor of size "
                             r"'\[2\]'")
    raises_both(lambda lib: setattr(leaf(lib, [1.0, 2.0]), "grad", lib.ones(2, dtype=lib.float32)),
                torch, match="attempting to assign a gradient with dtype")


# ----------------------------------------------------------------------------- retain_grad
def test_retain_grad_values_flags_and_accumulation():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.retain_grad()
        y.retain_grad()  # twice is harmless
        x.retain_grad()  # leaves: no-op
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = y.grad.clone()
        z.backward()
        return first, y.grad, y.retains_grad, x.retains_grad, x.grad

    run_both(prog, torch)


def test_retain_grad_follows_in_place_ops():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.retain_grad()
        z = y * 1
        y.add_(1)
        (y * z).sum().backward()
        return y.grad, x.grad

    run_both(prog, torch)


def test_retain_grad_errors_and_non_leaf_warning():
    raises_both(lambda lib: lib.ones(2).retain_grad(), torch,
                match="can't retain_grad on Tensor that has requires_grad=False")
    for lib in (tg, torch):
        y = leaf(lib, [1.0]) * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
            assert y.grad is None


def test_retained_grad_under_create_graph():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * x
        y.retain_grad()
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        return y.grad, y.grad.grad_fn is not None, g

    run_both(prog, torch)


# ----------------------------------------------------------------------------- hooks
def test_leaf_hooks_modify_grad_and_remove():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        h1 = x.register_hook(lambda g: g * 3)
        x.register_hook(lambda g: log.append(g.clone()))
        (x * 2).sum().backward()
        first = x.grad.clone()
        h1.remove()
        (x * 2).sum().backward()
        return first, x.grad, log

    run_both(prog, torch)


def test_non_leaf_hooks_and_grad_seen_by_hooks():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * x
        y.register_hook(lambda g: log.append(g.clone()))
        y.register_hook(lambda g: g + 1)
        z = y.sum()
        del y  # the hook lives on the graph, not on the Python object
        z.backward()
        return log, x.grad

    run_both(prog, torch)


def test_hooks_registered_before_and_after_in_place():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        y.register_hook(lambda g: log.append(("before", g.clone())))
        y.mul_(3)
        y.register_hook(lambda g: log.append(("after", g.clone())))
        (y * const(lib, [1.0, 10.0])).sum().backward()
        return log, x.grad

    run_both(prog, torch)


def test_hook_in_grad_call_and_handle_as_context_manager():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x.exp()
        with y.register_hook(lambda g: g * 0.5):
            (gx,) = lib.autograd.grad(y.sum(), x, retain_graph=True)
        (gx2,) = lib.autograd.grad(y.sum(), x)
        return gx, gx2

    run_both(prog, torch)


def test_post_accumulate_grad_hook():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        h = x.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.clone()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        h.remove()
        (x * 4).sum().backward()
        return log, x.grad

    run_both(prog, torch)
    raises_both(lambda lib: (leaf(lib, [1.0]) * 2).register_post_accumulate_grad_hook(print),
                torch, match="post accumulate grad hooks cannot be registered on non-leaf tensors")
    raises_both(lambda lib: lib.ones(1).register_hook(print), torch,
                match="cannot register a hook on a tensor that doesn't require gradient")


# ----------------------------------------------------------------------------- the graph
def test_node_interface_names_and_next_functions():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        c = const(lib, [3.0, 4.0])
        y = (x * c).exp().sum()
        fn = y.grad_fn
        mul = fn.next_functions[0][0].next_functions[0][0]
        acc = mul.next_functions[0][0]
        return (graph_names(y), [nr for _, nr in mul.next_functions], mul.next_functions[1][0],
                acc.variable is x, fn.metadata, isinstance(fn, lib.autograd.graph.Node))

    run_both(prog, torch)


def test_node_hooks_and_prehooks():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * 3
        z = y.exp().sum()
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        h = y.grad_fn.register_hook(lambda gi, go: log.append((gi[0].clone(), go[0].clone())))
        y.grad_fn.metadata["tag"] = "mine"
        z.backward(retain_graph=True)
        first = x.grad.clone()
        h.remove()
        z.backward()
        return log, first, x.grad, y.grad_fn.metadata

    run_both(prog, torch)


def test_accumulate_grad_node_hooks():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        acc.register_prehook(lambda go: log.append(go[0].clone()))
        y.sum().backward()
        return log, x.grad

    run_both(prog, torch)


def test_saved_values_as_attributes():
    def prog(lib):
        a = leaf(lib, [0.0, 1.0, 2.0])
        w = leaf(lib, [3.0, 4.0, 5.0])
        b = a.exp()
        m = a * w
        sr = b.grad_fn._saved_result
        return (sr, (sr - b).abs().max().item() == 0, sr is b, node_name(sr.grad_fn),
                m.grad_fn._saved_self, m.grad_fn._saved_other)

    run_both(prog, torch)
    x = tg.ones(3, requires_grad=True)
    names = dir(x.exp().grad_fn)
    assert "_saved_result" in names and "metadata" in names and "next_functions" in names
    assert "_saved_self" in dir((x * x).grad_fn) and "_saved_other" in dir((x * x).grad_fn)
    with pytest.raises(AttributeError):
        x.exp().grad_fn._saved_nothing


# ----------------------------------------------------------------------------- requires_grad
def test_requires_grad_propagation_and_errors():
    def prog(lib):
        x = leaf(lib, [1.0])
        c = const(lib, [2.0])
        y = x * c
        d = c * 2
        i = lib.tensor([1, 2])
        return (y.requires_grad, y.is_leaf, d.requires_grad, d.is_leaf, (x > 0).requires_grad,
                (i * 2).requires_grad, x.requires_grad_(True).is_leaf, y.requires_grad_(True) is y)

    run_both(prog, torch)
    raises_both(lambda lib: (leaf(lib, [1.0]) * 2).requires_grad_(False), torch,
                match="you can only change requires_grad flags of leaf variables")
    raises_both(lambda lib: lib.tensor([1, 2]).requires_grad_(), torch,
                match="only Tensors of floating point dtype can require gradients")
    raises_both(lambda lib: lib.tensor([1, 2], requires_grad=True), torch,
                match="nly Tensors of floating point (and complex )?dtype can require gradients")


def test_detach_and_detach_():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        d = y.detach()
        facts = (d.requires_grad, d.grad_fn is None, d.data_ptr() == y.data_ptr())
        d.add_(1)  # shares storage and the version counter
        y2 = x * 3
        y2.detach_()
        return facts, y, y._version, y2.requires_grad, y2.is_leaf, y2.grad_fn is None

    run_both(prog, torch)
    raises_both(lambda lib: (leaf(lib, [1.0, 2.0]) * 2)[0].detach_(), torch,
                match="Can't detach views in-place")


def test_data_is_untracked():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 1
        z = y.exp()
        y.data.add_(1)  # not seen by the version counter: no error, gradient uses new value
        z.sum().backward()
        return y._version, x.data.requires_grad, x.grad

    run_both(prog, torch)


def test_numpy_of_tensor_requiring_grad():
    raises_both(lambda lib: leaf(lib, [1.0]).numpy(), torch,
                match="Can't call numpy\\(\\) on Tensor that requires grad")

    def under_no_grad(lib):
        with lib.no_grad():
            return float(leaf(lib, [1.5]).numpy()[0])

    run_both(under_no_grad, torch)


def test_deep_chain_does_not_hit_recursion_limits():
    x = tg.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])


def test_first_grad_takes_the_layout_of_the_parameter():
    def prog(lib):
        base = lib.tensor(np.arange(12.0).reshape(3, 4))
        p = base.t().detach().requires_grad_()  # a column-major leaf
        (p * 2).sum().backward()
        q = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        (q * 2).sum().backward()
        return p.stride(), p.grad.stride() == p.stride(), q.grad.stride() == q.stride(), p.grad

    run_both(prog, torch)


def test_roots_that_depend_on_each_other_and_repeat():
    def prog(lib):
        x = leaf(lib, [1.0, -2.0])
        y = x * 2
        z = (y * y).sum()
        lib.autograd.backward([y, z, z], [const(lib, [1.0, 10.0]), None, None])
        first = x.grad.clone()
        w = x.exp()
        g = lib.autograd.grad([w, w.sum()], [x, w], [const(lib, [1.0, 1.0]), None])
        return first, g

    run_both(prog, torch)


def test_gradient_edges_as_inputs_and_outputs_like_pytorch():
    from tracegrad.autograd.graph import GradientEdge, get_gradient_edge

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge) and edge.node is y.grad_fn and edge.output_nr == 0
    del y
    z = (x.exp() * 3).sum()  # (a fresh use of x; the edge still names the first exp node)
    (gx,) = tg.autograd.grad(z, get_gradient_edge(x), retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), 3 * np.exp([1.0, 2.0]), rtol=1e-6)
    w = x * 3
    (gw,) = tg.autograd.grad(get_gradient_edge(w), x, grad_outputs=tg.ones(2))
    np.testing.assert_allclose(gw.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="must be given in grad_outputs"):
        tg.autograd.grad(get_gradient_edge(x * 2), x)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(tg.ones(2))
    x.grad = None
    (x * x).sum().backward(inputs=[get_gradient_edge(x)])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_gradient_edge_of_a_non_leaf_receives_its_incoming_gradient():
    torch = pytest.importorskip("torch")
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        edge = lib.autograd.graph.get_gradient_edge(y)
        (g,) = lib.autograd.grad((y * y).sum(), edge)
        if lib is tg:
            got = g.numpy()
        else:
            want = g.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_legacy_variable_multithreading_and_increment_version():
    v = tg.autograd.Variable(tg.ones(2), requires_grad=True)
    assert v.requires_grad and isinstance(tg.zeros(1), tg.autograd.Variable)
    with pytest.raises(TypeError, match="has to be a tensor"):
        tg.autograd.Variable([1.0])
    assert tg.autograd.is_multithreading_enabled()
    with tg.autograd.set_multithreading_enabled(False):
        assert not tg.autograd.is_multithreading_enabled()
    assert tg.autograd.is_multithreading_enabled()
    a = tg.ones(2, requires_grad=True)
    b = a * 1
    y = (b * b).sum()
    tg.autograd.graph.increment_version(b)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
