"""Every example of PyTorch's reference pages about Function/FunctionCtx
(../shared/reference/001_*.txt, 002_*.txt) and the Function, backward/grad, grad-mode,
gradient-layout, in-place and graph examples of the torch.autograd page (003_*.txt), written
once against ``lib`` and run on both tracegrad and PyTorch. (The functional API, forward-AD,
saved-tensor-hook, anomaly and profiler examples of 003 live with those features' tests.)"""
import pytest

import tracegrad as tg
from autograd_oracle import raises_both, run_both

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:torch.*")


def once_differentiable(lib):
    return lib.autograd.function.once_differentiable


# ----------------------------------------------------------------------------- 001 / 002: save_for_backward
def make_save_for_backward_func(lib):
    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z: int):
            w = x * z
            out = x * y + y * z + w * y
            ctx.save_for_backward(x, y, w, out)
            ctx.z = z  # z is not a tensor
            return out

        @staticmethod
        @once_differentiable(lib)
        def backward(ctx, grad_out):
            x, y, w, out = ctx.saved_tensors
            z = ctx.z
            gx = grad_out * (y + y * z)
            gy = grad_out * (x + z + w)
            gz = None
            return gx, gy, gz

    return Func


def test_save_for_backward_example():
    def prog(lib):
        Func = make_save_for_backward_func(lib)
        a = lib.tensor(1., requires_grad=True, dtype=lib.double)
        b = lib.tensor(2., requires_grad=True, dtype=lib.double)
        c = 4
        d = Func.apply(a, b, c)
        d.backward()
        return d, a.grad, b.grad, d.grad_fn.z

    run_both(prog, torch)


def test_save_for_backward_example_is_once_differentiable():
    def prog(lib):
        Func = make_save_for_backward_func(lib)
        a = lib.tensor(1., requires_grad=True, dtype=lib.double)
        b = lib.tensor(2., requires_grad=True, dtype=lib.double)
        d = Func.apply(a, b, 4)
        (ga, gb) = lib.autograd.grad(d * d, (a, b), create_graph=True)
        (ga + gb).backward()

    raises_both(prog, torch, match="trying to differentiate twice")


def test_save_for_backward_accepts_none():
    def prog(lib):
        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(None, x, None)  # "Arguments can also be None. This is a no-op."
                return x * 2

            @staticmethod
            def backward(ctx, g):
                none1, x, none2 = ctx.saved_tensors
                return g * 2 + 0 * x

        a = lib.tensor([1., 2.], requires_grad=True, dtype=lib.double)
        Func.apply(a).sum().backward()
        return a.grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- 002: mark_dirty
def test_mark_dirty_example():
    def prog(lib):
        class Inplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x_npy = x.numpy()  # x_npy shares storage with x
                x_npy += 1
                ctx.mark_dirty(x)
                return x

            @staticmethod
            @once_differentiable(lib)
            def backward(ctx, grad_output):
                return grad_output

        a = lib.tensor(1., requires_grad=True, dtype=lib.double).clone()
        b = a * a
        Inplace.apply(a)  # This would lead to wrong gradients!
        # but the engine would not know unless we mark_dirty
        b.backward()  # RuntimeError: one of the variables needed for gradient
        # computation has been modified by an inplace operation

    raises_both(prog, torch, match="one of the variables needed for gradient computation has been "
                                   "modified by an inplace operation")


# ----------------------------------------------------------------------------- 002: mark_non_differentiable
def test_mark_non_differentiable_example():
    def prog(lib):
        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                sorted, idx = x.sort()
                ctx.mark_non_differentiable(idx)
                ctx.save_for_backward(x, idx)
                return sorted, idx

            @staticmethod
            @once_differentiable(lib)
            def backward(ctx, g1, g2):  # still need to accept g2
                x, idx = ctx.saved_tensors
                grad_input = lib.zeros_like(x)
                grad_input.index_add_(0, idx, g1)
                return grad_input

        x = lib.tensor([0.5, -1.0, 2.0, 0.0], requires_grad=True, dtype=lib.double)
        s, idx = Func.apply(x)
        (s * lib.arange(4, dtype=lib.double)).sum().backward()
        return s, idx, idx.requires_grad, x.grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- 002: save_for_forward
def test_save_for_forward_example():
    def prog(lib):
        fwAD = lib.autograd.forward_ad

        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, z: int):
                ctx.save_for_backward(x, y)
                ctx.save_for_forward(x, y)
                ctx.z = z
                return x * y * z

            @staticmethod
            def jvp(ctx, x_t, y_t, _):
                x, y = ctx.saved_tensors
                z = ctx.z
                return z * (y * x_t + x * y_t)

            @staticmethod
            def vjp(ctx, grad_out):
                x, y = ctx.saved_tensors
                z = ctx.z
                return z * grad_out * y, z * grad_out * x, None

        a = lib.tensor(1., requires_grad=True, dtype=lib.double)
        t = lib.tensor(1., dtype=lib.double)
        b = lib.tensor(2., requires_grad=True, dtype=lib.double)
        c = 4

        with fwAD.dual_level():
            a_dual = fwAD.make_dual(a, t)
            d = Func.apply(a_dual, b, c)
            tangent = fwAD.unpack_dual(d).tangent.detach()
        d.backward()
        return d.detach(), tangent, a.grad, b.grad

    run_both(prog, torch)


def test_save_for_forward_rejects_non_tensors():
    def prog(lib):
        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_forward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        Func.apply(lib.ones(1, requires_grad=True))

    raises_both(prog, torch, AssertionError, "save_for_forward expects all arguments to be tensors")


# ----------------------------------------------------------------------------- 002: set_materialize_grads
def test_set_materialize_grads_example():
    def prog(lib):
        seen = []

        class SimpleFunc(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone(), x.clone()

            @staticmethod
            @once_differentiable(lib)
            def backward(ctx, g1, g2):
                seen.append(("simple", g1, g2))
                return g1 + g2  # No check for None necessary

        # We modify SimpleFunc to handle non-materialized grad outputs
        class Func(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                ctx.save_for_backward(x)
                return x.clone(), x.clone()

            @staticmethod
            @once_differentiable(lib)
            def backward(ctx, g1, g2):
                seen.append(("func", g1, g2))
                x, = ctx.saved_tensors
                grad_input = lib.zeros_like(x)
                if g1 is not None:  # We must check for None now
                    grad_input += g1
                if g2 is not None:
                    grad_input += g2
                return grad_input

        a = lib.tensor(1., requires_grad=True)
        b, _ = Func.apply(a)  # induces g2 to be undefined
        b.backward()
        c, _ = SimpleFunc.apply(a)
        c.backward()
        return seen, a.grad

    run_both(prog, torch)


# ----------------------------------------------------------------------------- 003: Function (Exp)
def test_exp_function_example():
    def prog(lib):
        class Exp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, i):
                result = i.exp()
                ctx.save_for_backward(result)
                return result

            @staticmethod
            def backward(ctx, grad_output):
                result, = ctx.saved_tensors
                return grad_output * result

        # Use it by calling the apply method:
        input = lib.tensor([[0.1, -0.2], [1.0, 0.0]], requires_grad=True)
        output = Exp.apply(input)
        output.backward(lib.ones(2, 2))
        return output, input.grad, output.grad_fn.name()

    run_both(prog, torch)


def test_exp_function_example_passes_gradcheck():
    class Exp(tg.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            result, = ctx.saved_tensors
            return grad_output * result

    x = tg.tensor([[0.1, -0.2], [1.0, 0.3]], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(Exp.apply, (x,))
    assert tg.autograd.gradgradcheck(Exp.apply, (x,))


# ----------------------------------------------------------------------------- 003: tensors, layouts
def test_variable_deprecated_section_factory_with_requires_grad():
    def prog(lib):
        lib.manual_seed(0)
        autograd_tensor = lib.randn((2, 3, 4), requires_grad=True)
        return (tuple(autograd_tensor.shape), autograd_tensor.requires_grad, autograd_tensor.is_leaf,
                autograd_tensor.grad is None, autograd_tensor.dtype == lib.float32)

    run_both(prog, torch)


def test_default_gradient_layouts():
    def prog(lib):
        param = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        history = []
        for it in range(3):  # "for iterations..."
            param.grad = None  # reset to None before each accumulation phase
            loss = (param * param * (it + 1)).sum()
            loss.backward()
            history.append(param.grad.clone())
        # 3: without create_graph, later backwards accumulate into .grad in place
        g = param.grad
        (param * 3).sum().backward()
        in_place = param.grad is g
        # 4: with create_graph, .grad is replaced by a new tensor .grad + new grad
        (param ** 2).sum().backward(create_graph=True)
        replaced = param.grad is not g
        return history, in_place, replaced, param.grad.requires_grad, g

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns about the create_graph reference cycle
        run_both(prog, torch)


def test_manual_gradient_layouts():
    def prog(lib):
        param = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        param.grad = lib.zeros(2, 2)  # assigned before the first backward and never reset
        mine = param.grad
        for _ in range(2):
            (param * param).sum().backward()
            param.grad.zero_()  # what model.zero_grad(set_to_none=False) does
        (param * 5).sum().backward()
        return param.grad is mine, mine

    run_both(prog, torch)


# ----------------------------------------------------------------------------- 003: in-place checks
def test_in_place_correctness_check():
    def prog(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x.sigmoid()  # saves its output
        y.mul_(2)  # modified in place afterwards
        y.sum().backward()  # "an error will be raised once backward pass is started"

    raises_both(prog, torch, match="modified by an inplace operation")


# ----------------------------------------------------------------------------- 003: tensor autograd functions
def test_tensor_autograd_functions():
    def prog(lib):
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        before = (x.grad is None, x.requires_grad, x.is_leaf)
        h = x * 2
        h.retain_grad()
        handle = x.register_hook(lambda g: g * 10)
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        seen = []
        (h * h).sum().backward()
        handle.remove()
        d = h.detach()
        h2 = x * 3
        h2.detach_()
        return (before, x.grad, h.grad, h.is_leaf, d.requires_grad, h2.is_leaf, h2.requires_grad,
                seen)

    run_both(prog, torch)


# ----------------------------------------------------------------------------- 003: autograd graph
def test_saved_tensors_are_attributes_of_grad_fn():
    def prog(lib):
        a = lib.tensor([0., 0., 0.], requires_grad=True)
        b = a.exp()
        is_node = isinstance(b.grad_fn, lib.autograd.graph.Node)
        names = dir(b.grad_fn)
        listed = [n for n in ("_saved_result", "metadata", "name", "next_functions",
                              "register_hook", "register_prehook") if n in names]
        return is_node, listed, (b.grad_fn._saved_result - b).abs().max().item() == 0

    run_both(prog, torch)


def test_backward_error_propagates_without_anomaly_mode():
    # the first half of the detect_anomaly example: the error raised in backward surfaces as is
    def prog(lib):
        class MyFunc(lib.autograd.Function):
            @staticmethod
            def forward(ctx, inp):
                return inp.clone()

            @staticmethod
            def backward(ctx, gO):
                # Error during the backward pass
                raise RuntimeError("Some error in backward")
                return gO.clone()

        def run_fn(a):
            out = MyFunc.apply(a)
            return out.sum()

        inp = lib.rand(10, 10, requires_grad=True)
        out = run_fn(inp)
        out.backward()

    ours, theirs = raises_both(prog, torch, match="^Some error in backward$")
    assert ours == theirs


def test_backward_and_grad_summary():
    # "backward: Computes the sum of gradients of given tensors with respect to graph leaves.
    #  grad: Computes and returns the sum of gradients of outputs with respect to the inputs."
    def prog(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        outs = [x * 2, x ** 2]
        lib.autograd.backward([o.sum() for o in outs])
        g = lib.autograd.grad([(x * 2).sum(), (x ** 2).sum()], x)
        return x.grad, g

    run_both(prog, torch)


def test_locally_disabling_gradient_computation():
    def prog(lib):
        x = lib.tensor([1.0], requires_grad=True)
        with lib.no_grad():
            a = x * 2
        with lib.inference_mode():
            b = x * 2
        with lib.set_grad_enabled(False):
            c = x * 2
        return a.requires_grad, b.requires_grad, b.is_inference(), c.requires_grad

    run_both(prog, torch)
