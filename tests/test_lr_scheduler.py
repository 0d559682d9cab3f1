"""Learning-rate schedulers against torch's (the same rates to the last bit), and a compiled
training step under a schedule: one program, the same parameters as eager and as torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tracegrad as tg  # noqa: E402

SCHEDULES = {
    "LambdaLR": {"lr_lambda": lambda e: 1.0 / (1 + e)},
    "StepLR": {"step_size": 3, "gamma": 0.5},
    "MultiStepLR": {"milestones": [2, 5, 5, 9], "gamma": 0.3},
    "ExponentialLR": {"gamma": 0.9},
    "CosineAnnealingLR": {"T_max": 7, "eta_min": 0.01},
    "LinearLR": {"start_factor": 0.25, "total_iters": 6},
    "ConstantLR": {"factor": 0.4, "total_iters": 4},
    "PolynomialLR": {"total_iters": 12, "power": 2.0},
    "MultiplicativeLR": {"lr_lambda": lambda e: 0.95 if e % 2 else 0.9},
    "CosineAnnealingWarmRestarts": {"T_0": 3, "T_mult": 2, "eta_min": 0.001},
    "CosineAnnealingWarmRestarts-1": {"T_0": 4},
    "OneCycleLR": {"max_lr": 1.0, "total_steps": 20},
    "CyclicLR": {"base_lr": 0.1, "max_lr": [1.0, 0.5], "step_size_up": 3, "step_size_down": 2},
    "CyclicLR-triangular2": {"base_lr": [0.1, 0.2], "max_lr": 1.0, "step_size_up": 2, "mode": "triangular2"},
    "CyclicLR-exp_range": {"base_lr": 0.1, "max_lr": 1.0, "step_size_up": 4, "mode": "exp_range",
                           "gamma": 0.9, "cycle_momentum": False},
    "CyclicLR-scale_fn": {"base_lr": 0.1, "max_lr": 1.0, "step_size_up": 3, "scale_fn": lambda x: 1 / (1 + x),
                          "scale_mode": "iterations", "base_momentum": 0.5, "max_momentum": 0.95},
    "OneCycleLR-three-phase-linear": {"max_lr": [1.0, 2.0], "total_steps": 21, "three_phase": True,
                                      "anneal_strategy": "linear", "pct_start": 0.25},
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_rates_match_torch(name):
    rates = {}
    for lib in (tg, torch):
        opt = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.ones(1))]},
                             {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}], lr=0.7)
        sched = getattr(lib.optim.lr_scheduler, name.split("-")[0])(opt, **SCHEDULES[name])
        seq = []
        for _ in range(19):
            opt.step()
            sched.step()
            seq.append((sched.get_last_lr(), [g.get("momentum") for g in opt.param_groups]))
        rates[lib] = seq
    assert rates[tg] == rates[torch]


def test_warm_restarts_at_fractional_epochs_and_chained_match_torch():
    rates = {}
    for lib in (tg, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        warm = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3)
        seq = []
        for epoch in (0.5, 1.25, 2.0, 7.5, 9, 30.2):
            warm.step(epoch)
            seq.append(warm.get_last_lr())
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        S = lib.optim.lr_scheduler
        chained = S.ChainedScheduler([S.ExponentialLR(opt, 0.9), S.StepLR(opt, 3, 0.5)])
        for _ in range(8):
            opt.step()
            chained.step()
            seq.append(chained.get_last_lr())
        rates[lib] = seq
    assert rates[tg] == rates[torch]


def test_sequential_and_epoch_steps_match_torch():
    rates = {}
    for lib in (tg, torch):
        S = lib.optim.lr_scheduler
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
        # (a ChainedScheduler may come first; later, PyTorch's fails: it has no closed form)
        seq = S.SequentialLR(opt, [S.ChainedScheduler([S.ExponentialLR(opt, 0.9), S.StepLR(opt, 2, 0.5)]),
                                   S.LinearLR(opt, 0.1, total_iters=3), S.CosineAnnealingLR(opt, T_max=4)],
                             milestones=[3, 7])
        got = [seq.get_last_lr()]
        for _ in range(12):
            opt.step()
            seq.step()
            got.append(seq.get_last_lr())
        for name, kwargs in [("StepLR", {"step_size": 3}), ("MultiStepLR", {"milestones": [2, 4]}),
                             ("ExponentialLR", {"gamma": 0.8}), ("CosineAnnealingLR", {"T_max": 5}),
                             ("LinearLR", {}), ("ConstantLR", {}), ("PolynomialLR", {"power": 2.0}),
                             ("LambdaLR", {"lr_lambda": lambda e: 0.5 ** e})]:
            opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.5)
            sched = getattr(S, name)(opt, **kwargs)
            for epoch in (3, 1, 6):
                opt.step()
                with pytest.warns(UserWarning, match="epoch parameter"):
                    sched.step(epoch)
                got.append((name, sched.get_last_lr()))
        rates[lib] = got
    assert rates[tg] == rates[torch]
    opt = tg.optim.SGD([tg.nn.Parameter(tg.ones(1))], lr=0.5)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        tg.optim.lr_scheduler.SequentialLR(opt, [tg.optim.lr_scheduler.StepLR(opt, 2)], milestones=[3])


@pytest.mark.parametrize("kwargs", [{}, {"mode": "max", "threshold_mode": "abs", "threshold": 0.1,
                                         "patience": 1, "cooldown": 2, "min_lr": [0.05, 0.0]}], ids=str)
def test_reduce_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.95, 0.91, 0.92, 0.93, 0.5, 0.6, 0.6, 0.61, 0.7, 0.4] * 3
    rates = {}
    for lib in (tg, torch):
        opt = lib.optim.SGD([{"params": [lib.nn.Parameter(lib.ones(1))]},
                             {"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.3}], lr=0.7)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, **dict({"patience": 2}, **kwargs))
        seq = []
        for m in metrics:
            opt.step()
            sched.step(m)
            seq.append(sched.get_last_lr())
        rates[lib] = seq
    assert rates[tg] == rates[torch]


COSINE = ("CosineAnnealingLR", {"T_max": 5})
# OneCycleLR also cycles the momentum, or Adam's beta1, every step
ONE_CYCLE = ("OneCycleLR", {"max_lr": 0.2, "total_steps": 8})
CYCLIC = ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.2, "step_size_up": 2})


@pytest.mark.parametrize("opt_name, kwargs, schedule", [
    ("SGD", {"momentum": 0.9}, COSINE), ("Adam", {}, COSINE), ("AdamW", {"weight_decay": 0.1}, COSINE),
    ("RMSprop", {"momentum": 0.9, "centered": True}, COSINE), ("Adagrad", {"lr_decay": 0.1}, COSINE),
    ("SGD", {"momentum": 0.9, "nesterov": True}, ONE_CYCLE), ("SGD", {"momentum": 0.9, "dampening": 0.3}, ONE_CYCLE),
    ("Adam", {"amsgrad": True}, ONE_CYCLE), ("NAdam", {}, ONE_CYCLE), ("RAdam", {}, ONE_CYCLE),
    ("Adamax", {}, ONE_CYCLE), ("RMSprop", {"momentum": 0.9}, ONE_CYCLE), ("AdamW", {}, CYCLIC),
    ("SGD", {"momentum": 0.5}, CYCLIC)])
def test_compiled_step_follows_the_schedule_without_retracing(opt_name, kwargs, schedule):
    weights = {}
    for mode in ("eager", "c", "torch"):
        lib = torch if mode == "torch" else tg
        model = lib.nn.Linear(4, 3)
        with lib.no_grad():
            model.weight.copy_(lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
            model.bias.zero_()
        opt = getattr(lib.optim, opt_name)(model.parameters(), lr=0.1, **kwargs)
        sched = getattr(lib.optim.lr_scheduler, schedule[0])(opt, **schedule[1])

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        run = tg.compile(step, backend="c", fullgraph=True) if mode == "c" else step
        rng = np.random.default_rng(1)
        for _ in range(6):
            x, y = (lib.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((5, 4), (5, 3)))
            run(x, y)
            sched.step()
        weights[mode] = model.weight.detach().numpy()
        if mode == "c":
            assert len(run.programs) == 1
            assert not math.isclose(opt.param_groups[0]["lr"], 0.1)
    np.testing.assert_allclose(weights["c"], weights["eager"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights["eager"], weights["torch"], rtol=1e-5, atol=1e-6)


def test_changing_other_options_still_retraces():
    w = tg.nn.Parameter(tg.ones(3))
    opt = tg.optim.SGD([w], lr=0.1, momentum=0.5)

    @tg.compile
    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    step()
    opt.param_groups[0]["lr"] = 0.05
    opt.param_groups[0]["momentum"] = 0.9  # a program input, like the rate
    step()
    assert len(step.programs) == 1
    # the group's other options are one guard (guards run on every call), named in the reason
    option_guards = [g for g in step.programs[0].capture.state_guards if "options" in str(g[1])]
    assert len(option_guards) == 1 and "weight_decay" in option_guards[0][1]
    opt.param_groups[0]["weight_decay"] = 0.01
    assert "weight_decay" in step.programs[0].mismatch([], True)
    step()
    assert len(step.programs) == 2
    # whether there is a momentum at all picks the code: a zero momentum retraces
    opt.param_groups[0]["momentum"] = 0.0
    assert "momentum == 0" in step.programs[1].mismatch([], True)
    step()
    assert len(step.programs) == 3


def test_option_tensors_follow_the_options_and_name_the_inputs():
    w = tg.nn.Parameter(tg.ones(2))
    opt = tg.optim.Adam([w], lr=0.1, betas=(0.9, 0.99))
    group = opt.param_groups[0]
    group["betas"] = (0.5, 0.75)
    assert [float(t) for t in group.option_tensors["betas"]] == [0.5, 0.75]
    opt.load_state_dict({"state": {}, "param_groups": [dict(group, betas=[0.6, 0.7], params=[0])]})
    assert group["betas"] == (0.6, 0.7) and [float(t) for t in group.option_tensors["betas"]] == [0.6, 0.7]

    @tg.compile(fullgraph=True)
    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()

    step()
    signature = str(step.programs[0].graph).splitlines()[0]
    assert "opt.param_groups[0]['betas'][0]" in signature and "opt.param_groups[0]['lr']" in signature
