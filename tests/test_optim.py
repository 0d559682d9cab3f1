"""tg.optim: SGD, Adam, AdamW updates against PyTorch step by step, hyper-parameter
validation, param groups, zero_grad, state_dict/load_state_dict, and the compiler-facing
rules (state allocated up front, step count a 0-dim float tensor, state updated in place)."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (3,), ()]


def make_params(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    ours = [tg.nn.Parameter(tg.tensor(a)) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    return ours, theirs


def run_both(make_ours, make_theirs, steps=6, dtype=np.float64, skip_first=False, groups=None):
    """Feed identical gradients to both optimizers and compare parameters after each step."""
    ours, theirs = make_params(dtype)
    if groups is not None:
        ours_p, theirs_p = groups(ours), groups(theirs)
    else:
        ours_p, theirs_p = ours, theirs
    opt, ref = make_ours(ours_p), make_theirs(theirs_p)
    rng = np.random.default_rng(1)
    for step in range(steps):
        for i, (p, q) in enumerate(zip(ours, theirs)):
            if skip_first and i == 0 and step % 2 == 0:
                p.grad, q.grad = None, None  # params without grad are skipped
                continue
            g = rng.standard_normal(tuple(p.shape)).astype(dtype)
            p.grad, q.grad = tg.tensor(g), torch.tensor(g)
        opt.step()
        ref.step()
        rtol = 1e-12 if dtype == np.float64 else 2e-6
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=rtol, atol=rtol)
    return opt, ref, ours, theirs


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    dict(lr=0.05, momentum=0.5, weight_decay=0.1, maximize=True),
]
ADAM_CASES = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.02, maximize=True, weight_decay=0.05, amsgrad=True),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kwargs", SGD_CASES, ids=str)
def test_sgd_matches_torch(kwargs, dtype):
    run_both(lambda p: tg.optim.SGD(p, **kwargs), lambda p: torch.optim.SGD(p, **kwargs), dtype=dtype,
             skip_first=True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kwargs", ADAM_CASES, ids=str)
def test_adam_matches_torch(kwargs, dtype):
    run_both(lambda p: tg.optim.Adam(p, **kwargs), lambda p: torch.optim.Adam(p, **kwargs), dtype=dtype,
             skip_first=True)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.01, weight_decay=0.3, amsgrad=True)], ids=str)
def test_adamw_matches_torch(kwargs):
    run_both(lambda p: tg.optim.AdamW(p, **kwargs), lambda p: torch.optim.AdamW(p, **kwargs),
             skip_first=True)


RMSPROP_CASES = [
    dict(),
    dict(lr=0.02, alpha=0.9, eps=1e-6, weight_decay=0.05),
    dict(lr=0.01, momentum=0.9, centered=True),
    dict(lr=0.01, momentum=0.5, maximize=True),
]
ADAGRAD_CASES = [
    dict(),
    dict(lr=0.05, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5, eps=1e-8),
    dict(lr=0.02, maximize=True),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, kwargs", [("RMSprop", k) for k in RMSPROP_CASES]
                         + [("Adagrad", k) for k in ADAGRAD_CASES], ids=str)
def test_rmsprop_and_adagrad_match_torch(name, kwargs, dtype):
    _, _, ours, _ = run_both(lambda p: getattr(tg.optim, name)(p, **kwargs),
                             lambda p: getattr(torch.optim, name)(p, **kwargs), dtype=dtype, skip_first=True)


VARIANT_CASES = [
    ("NAdam", dict()), ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()), ("RAdam", dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adamax", dict()), ("Adamax", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()), ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()), ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.07), maximize=True)),
    ("ASGD", dict()), ("ASGD", dict(lr=0.05, lambd=0.1, alpha=0.5, t0=4, weight_decay=0.1)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, kwargs", VARIANT_CASES, ids=str)
def test_adam_variants_and_adadelta_match_torch(name, kwargs, dtype):
    """(RAdam with betas (0.5, 0.6): its rectified update starts at step 6 of the 12)"""
    run_both(lambda p: getattr(tg.optim, name)(p, **kwargs),
             lambda p: getattr(torch.optim, name)(p, **kwargs), steps=12, dtype=dtype, skip_first=True)


@pytest.mark.parametrize("name", ["NAdam", "RAdam", "Adamax", "Adadelta", "Rprop", "ASGD"])
def test_adam_variants_compile_to_eager_values(name):
    results = []
    for compiled in (False, True):
        tg.manual_seed(0)
        model = tg.nn.Linear(4, 3)
        opt = getattr(tg.optim, name)(model.parameters(), lr=0.05)
        x = tg.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))

        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        step(x)  # (allocates the state eagerly)
        run = tg.compile(step, backend="c", fullgraph=True) if compiled else step
        losses = [run(x).item() for _ in range(8)]
        results.append((losses, model.weight.detach().numpy().copy()))
        if compiled:
            assert len(run.programs) == 1  # the step count is data: no retrace
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_param_groups_with_own_options_match_torch():
    def groups(ps):
        return [{"params": ps[:1], "lr": 0.5, "momentum": 0.0}, {"params": ps[1:]}]

    opt, ref, _, _ = run_both(lambda g: tg.optim.SGD(g, lr=0.1, momentum=0.9),
                              lambda g: torch.optim.SGD(g, lr=0.1, momentum=0.9), groups=groups)
    assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[1]["lr"] == 0.1
    assert opt.param_groups[1]["momentum"] == 0.9


def test_add_param_group_and_errors():
    a, b = tg.nn.Parameter(tg.ones(2)), tg.nn.Parameter(tg.ones(3))
    opt = tg.optim.Adam([a], lr=0.1)
    opt.add_param_group({"params": b, "betas": (0.5, 0.6)})
    assert opt.param_groups[1]["lr"] == 0.1 and opt.param_groups[1]["betas"] == (0.5, 0.6)
    assert set(opt.state[b]) == {"step", "exp_avg", "exp_avg_sq"}
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        tg.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts, but got tracegrad.Tensor"):
        tg.optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        tg.optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        tg.optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        tg.optim.SGD([{"params": {a}}], lr=0.1)


@pytest.mark.parametrize("make, message", [
    (lambda p: tg.optim.SGD(p, lr=-1), "Invalid learning rate: -1"),
    (lambda p: tg.optim.SGD(p, lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda p: tg.optim.SGD(p, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: tg.optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: tg.optim.Adam(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: tg.optim.Adam(p, eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (lambda p: tg.optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: tg.optim.AdamW(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: tg.optim.AdamW(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: tg.optim.SGD([{"params": p, "lr": -2.0}], lr=0.1), "Invalid learning rate: -2.0"),
])
def test_hyper_parameter_validation_like_torch(make, message):
    params = [tg.nn.Parameter(tg.ones(2))]
    with pytest.raises(ValueError) as ours:
        make(params)
    assert str(ours.value) == message


def test_validation_messages_equal_torchs():
    p, q = [tg.nn.Parameter(tg.ones(1))], [torch.nn.Parameter(torch.ones(1))]
    for args in [dict(lr=-1), dict(lr=0.1, momentum=-1), dict(lr=0.1, nesterov=True)]:
        with pytest.raises(ValueError) as ours:
            tg.optim.SGD(p, **args)
        with pytest.raises(ValueError) as theirs:
            torch.optim.SGD(q, **args)
        assert str(ours.value) == str(theirs.value)
    for args in [dict(betas=(0.9, 1.5)), dict(eps=-1.0)]:
        with pytest.raises(ValueError) as ours:
            tg.optim.Adam(p, **args)
        with pytest.raises(ValueError) as theirs:
            torch.optim.Adam(q, **args)
        assert str(ours.value) == str(theirs.value)


def test_state_is_allocated_up_front_and_updated_in_place():
    params, _ = make_params(np.float32)
    opt = tg.optim.Adam(params, amsgrad=True)
    before = {id(p): dict(opt.state[p]) for p in params}
    for p in params:
        st = opt.state[p]
        assert st["step"].shape == () and st["step"].dtype is tg.float32 and st["step"].item() == 0
        assert st["exp_avg"].shape == p.shape and not st["exp_avg"].requires_grad
    for _ in range(3):
        for p in params:
            p.grad = tg.ones_like(p.detach())
        opt.step()
    for p in params:
        for name, t in opt.state[p].items():
            assert t is before[id(p)][name]  # same tensor objects: a compiled step can own them
        assert opt.state[p]["step"].item() == 3
    sgd = tg.optim.SGD(params, lr=0.1)
    assert all(not sgd.state[p] for p in params)  # plain SGD keeps no state
    sgd.param_groups[0]["momentum"] = 0.9  # changed later: state appears at the next step
    sgd.step()
    assert set(sgd.state[params[0]]) == {"momentum_buffer", "step"}


def test_zero_grad_and_closure():
    p = tg.nn.Parameter(tg.ones(3))
    opt = tg.optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 3.0
    assert p.tolist() == pytest.approx([0.8] * 3)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0] * 3
    opt.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "RMSprop", "Adagrad",
                                  "Adadelta", "Rprop", "ASGD", "LBFGS"])
def test_param_groups_and_repr_match_torch(name):
    kwargs = {} if name == "LBFGS" else {"foreach": False}
    ours = getattr(tg.optim, name)([tg.nn.Parameter(tg.ones(2))], **kwargs)
    theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kwargs)
    assert ours.state_dict()["param_groups"] == theirs.state_dict()["param_groups"]
    assert repr(ours) == repr(theirs)
    if name != "LBFGS":
        with pytest.raises(NotImplementedError, match="differentiable=True"):
            getattr(tg.optim, name)([tg.nn.Parameter(tg.ones(2))], differentiable=True)


def test_state_dict_layout_matches_torch():
    opt, ref, _, _ = run_both(lambda p: tg.optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01), steps=2)
    ours, theirs = opt.state_dict(), ref.state_dict()
    assert theirs["param_groups"] == ours["param_groups"]  # (foreach, fused ... included)
    assert repr(opt) == repr(ref)
    assert ours["state"].keys() == theirs["state"].keys()
    for idx, st in theirs["state"].items():
        assert ours["state"][idx].keys() == st.keys()
        for k, v in st.items():
            np.testing.assert_allclose(ours["state"][idx][k].numpy(), v.numpy(), rtol=1e-12)
    assert "Parameter Group 0\n    amsgrad: False\n    betas: (0.9, 0.999)" in repr(opt)


def _grads(params, seed):
    rng = np.random.default_rng(seed)
    for p in params:
        p.grad = tg.tensor(rng.standard_normal(tuple(p.shape)), dtype=p.dtype)


@pytest.mark.parametrize("make", [
    lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.2),
    lambda p: tg.optim.Adam(p, lr=0.01, amsgrad=True),
    lambda p: tg.optim.AdamW(p, lr=0.01),
])
def test_load_state_dict_resumes_exactly(make):
    ps, _ = make_params(np.float64)
    opt = make(ps)
    for s in range(3):
        _grads(ps, s)
        opt.step()
    saved = {"state": {i: {k: v.clone() for k, v in st.items()} for i, st in opt.state_dict()["state"].items()},
             "param_groups": [dict(g) for g in opt.state_dict()["param_groups"]]}
    snapshot = [p.detach().clone() for p in ps]
    for s in range(3, 6):
        _grads(ps, s)
        opt.step()
    expected = [p.detach().numpy().copy() for p in ps]

    fresh = [tg.nn.Parameter(t.clone()) for t in snapshot]
    opt2 = make(fresh)
    state_tensors = {k: v for k, v in opt2.state[fresh[0]].items()}
    opt2.load_state_dict(saved)
    assert all(opt2.state[fresh[0]][k] is v for k, v in state_tensors.items())  # loaded in place
    for s in range(3, 6):
        _grads(fresh, s)
        opt2.step()
    for p, e in zip(fresh, expected):
        np.testing.assert_array_equal(p.detach().numpy(), e)


def test_load_torch_state_dict_then_continue_like_torch():
    for make_t, make_g in [
        (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.5),
         lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.5)),
        (lambda p: torch.optim.Adam(p, lr=0.01), lambda p: tg.optim.Adam(p, lr=0.01)),
    ]:
        ps, qs = make_params(np.float64)
        ref = make_t(qs)
        rng = np.random.default_rng(5)
        for _ in range(2):
            for q in qs:
                q.grad = torch.tensor(rng.standard_normal(tuple(q.shape)))
            ref.step()
        with torch.no_grad():
            for p, q in zip(ps, qs):
                p.data = tg.tensor(q.detach().numpy().copy())
        sd = ref.state_dict()
        converted = {"state": {i: {k: tg.tensor(v.numpy().copy()) for k, v in st.items()}
                               for i, st in sd["state"].items()},
                     "param_groups": sd["param_groups"]}
        opt = make_g(ps)
        opt.load_state_dict(converted)
        for _ in range(3):
            for p, q in zip(ps, qs):
                g = rng.standard_normal(tuple(q.shape))
                p.grad, q.grad = tg.tensor(g), torch.tensor(g)
            opt.step()
            ref.step()
        for p, q in zip(ps, qs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12)


def test_load_state_dict_errors():
    ps, _ = make_params(np.float32)
    opt = tg.optim.Adam(ps)
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": sd["param_groups"] * 2})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [dict(sd["param_groups"][0], params=[0])]})
    bad = {"state": {0: {"exp_avg": tg.zeros(2, 2)}}, "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match=r"'exp_avg' of shape \[2, 2\], but the optimizer's is \[4, 3\]"):
        opt.load_state_dict(bad)


@pytest.mark.parametrize("make", [
    lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.2),
    lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True),
    lambda p: tg.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=0.1),
    lambda p: tg.optim.AdamW(p, lr=0.01),
], ids=["sgd_dampening", "sgd_nesterov", "adam_amsgrad", "adamw"])
def test_step_traces_whole_and_never_retraces(make):
    """step() captures into one program (no graph break, fullgraph=True) that updates the
    parameters and the state in place like eager mode, and the step count never retraces it."""
    eager_ps, _ = make_params(np.float32)
    traced_ps, _ = make_params(np.float32)
    eager, traced = make(eager_ps), make(traced_ps)
    compiled_step = tg.compile(traced.step, backend="interpreter", fullgraph=True)
    for s in range(4):
        _grads(eager_ps, s)
        _grads(traced_ps, s)
        eager.step()
        compiled_step()
        for p, q in zip(eager_ps, traced_ps):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)
            for k, v in eager.state[p].items():
                np.testing.assert_allclose(traced.state[q][k].numpy(), v.numpy(), rtol=1e-6, atol=1e-7)
    assert len(compiled_step.programs) == 1


@pytest.mark.parametrize("kwargs", [dict(), dict(line_search_fn="strong_wolfe"),
                                    dict(lr=0.5, history_size=3, max_iter=7),
                                    dict(line_search_fn="strong_wolfe", history_size=2, max_eval=9)], ids=str)
def test_lbfgs_matches_torch(kwargs):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal(6)
    runs = {}
    for lib in (tg, torch):
        x = lib.nn.Parameter(lib.tensor([-1.2, 1.0, 0.3], dtype=lib.float64))
        A, B = lib.tensor(a), lib.tensor(b)
        opt = lib.optim.LBFGS([x], **kwargs)

        def closure():
            opt.zero_grad()
            rosen = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
            loss = rosen + ((A @ x - B) ** 2).sum() * 0.1
            loss.backward()
            return loss

        losses = [float(opt.step(closure)) for _ in range(4)]
        st = opt.state[x]
        runs[lib] = (losses, x.detach().numpy().copy(), st["func_evals"], st["n_iter"], len(st["old_dirs"]))
    # (not to the last bit: PyTorch's add with alpha is a fused multiply-add, rounded once)
    np.testing.assert_allclose(runs[tg][0], runs[torch][0], rtol=1e-6)
    np.testing.assert_allclose(runs[tg][1], runs[torch][1], rtol=1e-6, atol=1e-9)
    assert runs[tg][2:] == runs[torch][2:]


def test_step_and_state_dict_hooks_run_as_torchs():
    calls = {}
    for lib in (tg, torch):
        w = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([w], lr=0.5)
        log = []
        pre = opt.register_step_pre_hook(lambda o, args, kwargs: log.append(("pre", len(args))))
        opt.register_step_post_hook(lambda o, args, kwargs: log.append("post"))
        opt.register_state_dict_pre_hook(lambda o: log.append("sd-pre"))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        opt.register_load_state_dict_pre_hook(lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
        opt.register_load_state_dict_post_hook(lambda o: log.append("load-post"))
        w.grad = lib.ones(2)
        opt.step()
        pre.remove()
        opt.step()
        sd = opt.state_dict()
        opt.load_state_dict(sd)
        calls[lib] = (log, sorted(sd), w.tolist())
    assert calls[tg] == calls[torch]
