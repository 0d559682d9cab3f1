"""tg.autograd.Function against torch.autograd.Function: the same custom functions written once
against ``lib`` and run on both, comparing values, gradients, graph structure and errors."""
import numpy as np
import pytest

import tracegrad as tg
from autograd_oracle import assert_same, node_name, raises_both, run_both

torch = pytest.importorskip("torch")


def once(lib):
    return lib.autograd.function.once_differentiable


def make_exp(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    return Exp


def make_cube(lib):
    """x**3 with a backward written in ops: differentiable again (double backward)."""

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    return Cube


def leaf(lib, values, dtype="float64"):
    return lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)


# ----------------------------------------------------------------------------- basics
def test_exp_values_grads_and_node():
    def prog(lib):
        x = leaf(lib, [0.0, 0.5, -1.0])
        y = make_exp(lib).apply(x)
        name = y.grad_fn.name()
        saved = y.grad_fn.saved_tensors
        nxt = [node_name(n) for n, _ in y.grad_fn.next_functions]
        (y * 2).sum().backward()
        return y, x.grad, name, saved, nxt, y.is_leaf, y.grad_fn.needs_input_grad

    run_both(prog, torch)


def test_node_is_ctx_and_is_a_graph_node():
    x = tg.ones(2, requires_grad=True)
    y = make_exp(tg).apply(x)
    assert isinstance(y.grad_fn, tg.autograd.graph.Node)
    assert isinstance(y.grad_fn, tg.autograd.function.FunctionCtx)
    assert isinstance(y.grad_fn, tg.autograd.function.BackwardCFunction)
    assert y.grad_fn._forward_cls.__name__ == "Exp"
    # what the compiler reads: the SavedTensor list made from save_for_backward
    assert len(y.grad_fn.saved_for_backward) == 1
    assert y.grad_fn.saved_for_backward[0].is_output


def test_double_and_triple_backward_through_custom_backward():
    def prog(lib):
        x = leaf(lib, [0.5, -2.0, 1.5])
        y = make_cube(lib).apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        return g, gg, ggg

    run_both(prog, torch)


def test_exp_double_backward_uses_saved_output_graph():
    def prog(lib):
        x = leaf(lib, [0.1, 0.7])
        y = make_exp(lib).apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        return g, x.grad

    run_both(prog, torch)


def test_forward_runs_without_grad_backward_under_create_graph_mode():
    def prog(lib):
        seen = []

        class Probe(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                seen.append(("fwd", lib.is_grad_enabled()))
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                seen.append(("bwd", lib.is_grad_enabled()))
                return g

        x = leaf(lib, [1.0])
        Probe.apply(x).sum().backward()
        lib.autograd.grad(Probe.apply(x).sum(), x, create_graph=True)
        return seen

    run_both(prog, torch)


def test_no_grad_apply_and_inputs_without_grad():
    def prog(lib):
        Exp = make_exp(lib)
        x = leaf(lib, [1.0])
        with lib.no_grad():
            a = Exp.apply(x)
        b = Exp.apply(lib.ones(2))
        return a, a.grad_fn is None, b, b.grad_fn is None

    run_both(prog, torch)


# ----------------------------------------------------------------------------- inputs/outputs
def test_non_tensor_inputs_outputs_and_needs_input_grad():
    def prog(lib):
        record = {}

        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, k, b, name):
                ctx.k = k
                record["needs"] = ctx.needs_input_grad
                return a * k + b, k + 1, name, b.clone()

            @staticmethod
            def backward(ctx, g1, g2, g3, g4):
                record["grads"] = (g1, g2, g3, g4)
                return g1 * ctx.k, None, g1 + g4, None

        a = leaf(lib, [1.0, 2.0])
        b = lib.tensor([3.0, 4.0], dtype=lib.float64)
        out = Scale.apply(a, 3, b, "s")
        out[0].sum().backward()
        return out, a.grad, record["needs"], record["grads"], out[0].grad_fn.k

    run_both(prog, torch)


def test_keyword_arguments_count_as_inputs():
    def prog(lib):
        needs = []

        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=1):
                needs.append(ctx.needs_input_grad)
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, None

        x = leaf(lib, [1.0])
        F.apply(x, k=3).sum().backward()
        return needs, x.grad

    run_both(prog, torch)


def test_output_returned_as_is_is_an_alias():
    def prog(lib):
        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf(lib, [1.0, 2.0])
        y = Same.apply(x)
        facts = (y is x, y.data_ptr() == x.data_ptr(), y._version, node_name(y.grad_fn))
        y.sum().backward()
        return facts, x.grad

    run_both(prog, torch)


def test_inplace_on_custom_function_view_output_is_forbidden():
    def make(lib):
        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a

            @staticmethod
            def backward(ctx, g):
                return g

        class View(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a.view(-1)

            @staticmethod
            def backward(ctx, g):
                return g.view(2, 2)

        return Same, View

    raises_both(lambda lib: make(lib)[0].apply(leaf(lib, [1.0]) * 1).add_(1), torch,
                match="Output 0 of Same is a view and is being modified inplace")
    raises_both(lambda lib: make(lib)[1].apply(leaf(lib, [[1.0, 2.0], [3.0, 4.0]]) * 1).mul_(2),
                torch, match="This view was created inside a custom Function")


def test_same_input_returned_twice():
    def prog(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x, x

            @staticmethod
            def backward(ctx, g1, g2):
                return g1 + 10 * g2

        x = leaf(lib, [1.0, 2.0])
        a, b = Twice.apply(x)
        (a.sum() + 2 * b.sum()).backward()
        return a is b, x.grad

    run_both(prog, torch)


def test_unused_outputs_are_materialized_as_zeros():
    def prog(lib):
        got = []

        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                got.append((g1, g2))
                return 2 * g1 + 3 * g2

        x = leaf(lib, [1.0, 2.0])
        a, _ = Split.apply(x)
        a.sum().backward()
        return got, x.grad

    run_both(prog, torch)


def test_backward_returning_none_still_runs_upstream_with_zeros():
    def prog(lib):
        class Pass(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g

        class Block(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return None

        x = leaf(lib, [1.0, 2.0])
        Block.apply(Pass.apply(x)).sum().backward()
        return x.grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- ctx methods
def test_mark_non_differentiable_sort():
    def prog(lib):
        got = []

        class Sort(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                s, idx = x.sort()
                ctx.mark_non_differentiable(idx)
                ctx.save_for_backward(x, idx)
                return s, idx

            @staticmethod
            @once(lib)
            def backward(ctx, g1, g2):
                got.append(g2)
                x, idx = ctx.saved_tensors
                grad_input = lib.zeros_like(x)
                grad_input.index_add_(0, idx, g1)
                return grad_input

        x = leaf(lib, [3.0, 1.0, 2.0])
        s, i = Sort.apply(x)
        (s * lib.tensor([1.0, 10.0, 100.0], dtype=lib.float64)).sum().backward()
        return s, i, i.requires_grad, i.grad_fn is None, got, x.grad

    run_both(prog, torch)


def test_mark_non_differentiable_float_output_and_input():
    def prog(lib):
        class ND(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x * 2
                ctx.mark_non_differentiable(y, x)
                return y, x

            @staticmethod
            def backward(ctx, g1, g2):
                return g1

        x = leaf(lib, [1.0])
        y, xr = ND.apply(x)
        return y, y.grad_fn is None, xr, xr is x

    run_both(prog, torch)


def test_set_materialize_grads_false_passes_none():
    def prog(lib):
        got = []

        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                ctx.save_for_backward(x)
                return x.clone(), x.clone()

            @staticmethod
            @once(lib)
            def backward(ctx, g1, g2):
                got.append((g1, g2))
                (x,) = ctx.saved_tensors
                grad_input = lib.zeros_like(x)
                if g1 is not None:
                    grad_input += g1
                if g2 is not None:
                    grad_input += g2
                return grad_input

        a = leaf(lib, [1.0])
        b, _ = Func.apply(a)
        b.sum().backward()
        return got, a.grad

    run_both(prog, torch)


def make_add_one_inplace(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return AddOne


def test_mark_dirty_rebases_the_input():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0])
        c = x * 1
        r = make_add_one_inplace(lib).apply(c)
        facts = (r is c, c._version, node_name(c.grad_fn))
        (c * c).sum().backward()
        return facts, c, x.grad

    run_both(prog, torch)


def test_mark_dirty_bumps_version_without_grad():
    def prog(lib):
        w = lib.ones(2)
        r = make_add_one_inplace(lib).apply(w)
        with lib.no_grad():
            v = lib.ones(2, requires_grad=True) * 1
            make_add_one_inplace(lib).apply(v)
        return r is w, w._version, w, v._version, v.grad_fn is None

    run_both(prog, torch)


def test_mark_dirty_errors():
    class_ = make_add_one_inplace
    raises_both(lambda lib: class_(lib).apply(leaf(lib, [1.0])), torch,
                match="a leaf Variable that requires grad has been used in an in-place operation")
    raises_both(lambda lib: class_(lib).apply(leaf(lib, [1.0, 2.0])[1:]), torch,
                match="a view of a leaf Variable that requires grad is being used in an in-place")

    def not_returned(lib):
        class D(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        return D.apply(leaf(lib, [1.0]) * 1)

    raises_both(not_returned, torch,
                match="Some elements marked as dirty during the forward method were not returned")


def test_mark_dirty_invalidates_tensors_saved_before():
    def prog(lib):
        a = leaf(lib, [1.0]).clone()
        b = a * a
        make_add_one_inplace(lib).apply(a)
        b.backward()

    raises_both(prog, torch, match=r"modified by an inplace operation.*is at version 2; "
                                   r"expected version 0 instead")


def test_mark_dirty_on_a_view_rebases_its_base():
    def prog(lib):
        x = leaf(lib, [1.0, 2.0, 3.0, 4.0])
        base = x * 1
        view = base[1:3]
        make_add_one_inplace(lib).apply(view)
        (base * lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64)).sum().backward()
        return base, base._version, x.grad

    run_both(prog, torch)


def test_saved_tensors_version_check_and_freeing():
    def make(lib):
        class S(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                x, none = ctx.saved_tensors
                assert none is None
                return g * x

        return S

    def modified(lib):
        a = leaf(lib, [1.0, 2.0]).clone()
        y = make(lib).apply(a)
        a.mul_(2)
        y.sum().backward()

    raises_both(modified, torch, match=r"\[\w+\.DoubleTensor \[2\]\], which is output 0 of Mul"
                                       r"\w*, is at version 1; expected version 0 instead")

    def freed(lib):
        y = make(lib).apply(leaf(lib, [1.0]))
        y.sum().backward()
        return y.grad_fn.saved_tensors

    raises_both(freed, torch, match="Specify retain_graph=True")

    def retained(lib):
        x = leaf(lib, [1.0, 2.0])
        y = make(lib).apply(x)
        y.sum().backward(retain_graph=True)
        n_saved = len(y.grad_fn.saved_tensors)
        y.sum().backward()
        return x.grad, n_saved

    run_both(retained, torch)


def test_save_for_backward_rejects_non_tensors():
    def prog(lib):
        class S(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        S.apply(leaf(lib, [1.0]))

    raises_both(prog, torch, TypeError, "save_for_backward can only save variables, but argument 2 "
                                        "is of type int")


def test_free_attributes_on_ctx_are_readable_from_grad_fn():
    def prog(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, z):
                ctx.z = z
                ctx.note = "hi"
                return x * z

            @staticmethod
            def backward(ctx, g):
                return g * ctx.z, None

        y = F.apply(leaf(lib, [1.0]), 4)
        return y.grad_fn.z, y.grad_fn.note, y.grad_fn.needs_input_grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- once_differentiable
def test_once_differentiable_double_backward_raises():
    def make(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once(lib)
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        return Sq

    def first(lib):
        x = leaf(lib, [1.0, 2.0])
        (g,) = lib.autograd.grad(make(lib).apply(x).sum(), x, create_graph=True)
        return g, g.grad_fn is None

    run_both(first, torch)

    def second(lib):
        x = leaf(lib, [1.0, 2.0])
        z = (make(lib).apply(x) ** 2).sum()
        (g,) = lib.autograd.grad(z, x, create_graph=True)
        assert g.requires_grad and node_name(g.grad_fn) == "Error"
        g.sum().backward()

    raises_both(second, torch, match="trying to differentiate twice a function that was marked "
                                     "with @once_differentiable")


# ----------------------------------------------------------------------------- setup_context, vjp
def test_setup_context_style():
    def prog(lib):
        seen = []

        class SC(lib.autograd.Function):
            @staticmethod
            def forward(x, k=2):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                seen.append((len(inputs), inputs[1], output.requires_grad, lib.is_grad_enabled()))
                ctx.k = inputs[1]
                ctx.save_for_backward(inputs[0])

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * ctx.k * x, None

        x = leaf(lib, [1.0, 2.0])
        SC.apply(x).sum().backward()
        SC.apply(x, k=3).sum().backward()
        return seen, x.grad

    run_both(prog, torch)


def test_setup_context_saving_input_returned_as_is_errors():
    def prog(lib):
        class SC(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0])

            @staticmethod
            def backward(ctx, g):
                return g

        SC.apply(leaf(lib, [1.0]))

    raises_both(prog, torch, match="An input that has been returned as-is as output is being saved")


def test_vjp_alias_and_definition_errors():
    def vjp_only(lib):
        class V(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def vjp(ctx, g):
                return 5 * g

        x = leaf(lib, [1.0])
        V.apply(x).sum().backward()
        return x.grad

    run_both(vjp_only, torch)

    def both(lib):
        class B(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g

        B.apply(leaf(lib, [1.0])).sum().backward()

    raises_both(both, torch, match="Implementing both 'backward' and 'vjp'")

    def no_backward(lib):
        class NB(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

        NB.apply(leaf(lib, [1.0])).sum().backward()

    raises_both(no_backward, torch, NotImplementedError, "You must implement either the backward "
                                                         "or vjp method")

    def no_forward(lib):
        class NF(lib.autograd.Function):
            pass

        NF.apply(leaf(lib, [1.0]))

    raises_both(no_forward, torch, NotImplementedError, "You must implement the forward function")


def test_legacy_instantiation_warns_and_calling_raises():
    for lib in (tg, torch):
        Exp = make_exp(lib)
        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            inst = Exp()
        with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward"):
            inst(lib.ones(1))


# ----------------------------------------------------------------------------- gradient checks
def make_returning(lib, fn, n_inputs=2):
    class R(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, g):
            return fn(lib, g)

    R.__name__ = "R"
    return R


@pytest.mark.parametrize("fn,match", [
    (lambda lib, g: g, r"function R\w* returned an incorrect number of gradients \(expected 2, got 1\)"),
    (lambda lib, g: (g, g, g), r"incorrect number of gradients \(expected 2, got 3\)"),
    (lambda lib, g: (g, lib.ones(3)), r"returned an invalid gradient at index 1 - got \[3\] but "
                                      r"expected shape compatible with \[2\]"),
    (lambda lib, g: (lib.ones(1), g), r"invalid gradient at index 0 - got \[1\] but expected shape "
                                      r"compatible with \[2\]"),
    (lambda lib, g: (g, 5), "expected Variable or None \\(got int\\)"),
    (lambda lib, g: [g, g], r"incorrect number of gradients \(expected 2, got 1\)"),
    (lambda lib, g: ([g, g], None), "expected Variable or None \\(got list\\)"),
])
def test_wrong_gradients_are_clear_errors(fn, match):
    def prog(lib):
        a, b = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        make_returning(lib, fn).apply(a, b).sum().backward()

    raises_both(prog, torch, match=match)


def test_gradient_for_non_tensor_input_errors():
    def prog(lib):
        make_returning(lib, lambda lib, g: (g, g)).apply(leaf(lib, [1.0]), 3).sum().backward()

    raises_both(prog, torch, match="returned a gradient different than None at position 2, but the "
                                   "corresponding forward input was not a Variable")


@pytest.mark.parametrize("fn", [
    lambda lib, g: (g, g, None, None),  # extra trailing Nones are dropped
    lambda lib, g: (g.float(), g.long()),  # dtypes are cast to the inputs' (as PyTorch does)
    lambda lib, g: (lib.ones(3, 2, dtype=lib.float64), None),  # broadcastable: summed back
    lambda lib, g: (None, None),
])
def test_accepted_gradient_forms(fn):
    def prog(lib):
        a, b = leaf(lib, [1.0, 2.0]), leaf(lib, [3.0, 4.0])
        make_returning(lib, fn).apply(a, b).sum().backward()
        return a.grad, b.grad

    run_both(prog, torch)


def test_backward_exception_propagates_unchanged():
    class Boom(Exception):
        pass

    def prog(lib):
        class R(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                raise Boom("Some error in backward")

        R.apply(leaf(lib, [1.0])).sum().backward()

    ours, theirs = raises_both(prog, torch, Boom)
    assert ours == theirs == "Some error in backward"


# ----------------------------------------------------------------------------- hooks and graph
def test_node_hooks_on_custom_function_nodes():
    def prog(lib):
        log = []
        x = leaf(lib, [1.0, 2.0])
        y = make_exp(lib).apply(x)
        y.grad_fn.register_prehook(lambda go: log.append(("pre", go[0])))
        h = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10,))
        y.sum().backward(retain_graph=True)
        first = x.grad.clone()
        h.remove()
        x.grad = None
        y.sum().backward()
        return log, first, x.grad

    run_both(prog, torch)


def test_custom_function_inside_a_larger_graph_with_second_order():
    def prog(lib):
        x = leaf(lib, [[0.1, 0.2], [0.3, -0.4]])
        w = leaf(lib, [[1.0, -1.0], [0.5, 2.0]])
        h = make_exp(lib).apply(x @ w)
        loss = (make_cube(lib).apply(h.tanh()) * h).sum()
        gx, gw = lib.autograd.grad(loss, (x, w), create_graph=True)
        (gx.sum() + (gw * gw).sum()).backward()
        return loss, gx, gw, x.grad, w.grad

    run_both(prog, torch, rtol=1e-6)


def test_float32_custom_function_compares_with_torch():
    def prog(lib):
        x = lib.tensor(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), requires_grad=True)
        y = make_exp(lib).apply(x)
        y.backward(lib.ones(2, 3))
        return y, x.grad

    ours, _ = run_both(prog, torch)
    assert ours[1].dtype is tg.float32


def test_numpy_inside_forward_is_allowed_under_no_grad():
    def prog(lib):
        class NumpyAdd(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x_npy = x.numpy()  # shares storage; no_grad makes numpy() legal
                x_npy += 1
                ctx.mark_dirty(x)
                return x

            @staticmethod
            @once(lib)
            def backward(ctx, g):
                return g

        a = leaf(lib, [1.0]).clone()
        out = NumpyAdd.apply(a)
        out.backward()
        return out, a._version

    run_both(prog, torch)


def test_results_are_comparable_objects():
    # sanity check of the comparison helper itself
    assert_same((tg.ones(2), None, 3, "a"), (torch.ones(2), None, 3, "a"))
    with pytest.raises(AssertionError):
        assert_same(tg.ones(2), torch.zeros(2))


# ----------------------------------------------------------------------------- while tracing
def _compile_cases():
    Cube, Exp = make_cube(tg), make_exp(tg)

    class Sort(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return s, idx

        @staticmethod
        @tg.autograd.function.once_differentiable
        def backward(ctx, g1, g2):
            x, idx = ctx.saved_tensors
            gi = tg.zeros_like(x)
            gi.index_add_(0, idx, g1)
            return gi

    def step(x, w):  # forward and backward inside the captured program
        s, _ = Sort.apply(Exp.apply(Cube.apply(x * w)))
        loss = (s * tg.arange(3, dtype=tg.float64)).sum()
        loss.backward()
        return loss

    def loss_only(x, w):  # differentiated after the call
        return (Exp.apply(Cube.apply(x)) * w).sum()

    return step, loss_only


@pytest.mark.parametrize("case", ["step", "loss_only"])
def test_custom_function_is_traced_not_run_eagerly(case):
    step, loss_only = _compile_cases()
    fn = step if case == "step" else loss_only

    def run(f):
        x = tg.tensor([0.5, -1.0, 0.2], dtype=tg.float64, requires_grad=True)
        w = tg.tensor([1.0, 2.0, 0.5], dtype=tg.float64, requires_grad=True)
        out = f(x, w)
        if case == "loss_only":
            out.backward()
        return out, x.grad, w.grad

    compiled = tg.compile(fn, backend="interpreter", fullgraph=True)  # a graph break would raise
    for _ in range(2):
        for a, b in zip(run(compiled), run(fn)):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)


def test_grad_fn_apply_calls_backward_and_output_nr():
    def prog(lib):
        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                return 2 * g1 + 3 * g2

        x = leaf(lib, [1.0, 2.0])
        a, b = Two.apply(x)
        direct = a.grad_fn.apply(lib.ones(2, dtype=lib.float64), lib.ones(2, dtype=lib.float64))
        return a.output_nr, b.output_nr, a.grad_fn is b.grad_fn, direct

    run_both(prog, torch)


def test_custom_function_view_whose_base_is_modified_is_an_error():
    def make(lib):
        class View(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.view(-1)

            @staticmethod
            def backward(ctx, g):
                return g * 7

        return View

    def base_written(lib):
        z = leaf(lib, [1.0, 2.0]) * 1
        y = make(lib).apply(z)
        z.add_(1)
        return y.grad_fn

    raises_both(base_written, torch, match="Output 0 of View is a view and its base or another view "
                                           "of its base has been modified inplace")

    def facts(lib):
        x = leaf(lib, [1.0, 2.0])
        z = x * 1
        y = make(lib).apply(z)
        same = make_identity(lib).apply(z)
        return y._base is z, y._is_view(), same._base is z, same._is_view(), same is z

    run_both(facts, torch)


def make_identity(lib):
    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    return Same
