"""The implicit reparametrization gradients of gamma and Dirichlet samples, PyTorch's
``_standard_gamma_grad`` and ``_dirichlet_grad``: the derivative of a sample in its
concentration, ``dx/dalpha = -(dF/dalpha)(x) / pdf(x)`` (F the distribution function), which
a sampler cannot reparametrize explicitly. Both are PyTorch's approximations, branch for branch
and constant for constant (aten/src/ATen/native/Distributions.h), in double: a Taylor series for
small x, a saddle-point expansion for large concentrations, and fitted rational corrections
elsewhere (good to a few parts in 1e4 of the exact derivative, as PyTorch's). The C backend runs
the same code (compiler/backends/c/templates/runtime_gamma.h.j2). They have no derivative of their own
(nor in PyTorch).

>>> import tracegrad as tg
>>> from tracegrad.ops.gamma_grads import STANDARD_GAMMA_GRAD
>>> STANDARD_GAMMA_GRAD(tg.tensor([1.0, 20.0]), tg.tensor([0.5, 19.0]))  # (PyTorch's too)
tensor([0.8070, 0.9827])
"""
from __future__ import annotations

import numpy as np

from .elementwise import _quiet
from .registry import defop
from .shapes import broadcast_shapes
from .special import _digamma64


def _standard_gamma_grad(alpha, x):
    a, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    # x < 0.8: a Taylor series of the distribution function (and of its derivative in a)
    numer, denom = np.ones_like(a), a.copy()
    series1, series2 = 1 / denom, 1 / (denom * denom)
    for i in range(1, 6):
        numer = numer * -x / i
        denom = denom + 1
        series1, series2 = series1 + numer / denom, series2 + numer / (denom * denom)
    pow_x_a = x ** a
    pdf = x ** (a - 1) * np.exp(-x)
    cdf = pow_x_a * series1
    cdf_a = (np.log(x) - _digamma64(a)) * cdf - pow_x_a * series2
    small = -cdf_a / pdf
    small = np.where(np.isnan(small), 0.0, small)
    # a > 8: Rice's saddle-point expansion (a polynomial near x = a, where it is singular)
    near = (1 + 24 * a * (1 + 12 * a)) * (1440 * a * a + 6 * x * (53 - 120 * x) - 65 * x * x / a
                                           + a * (107 + 3600 * x)) / (1244160 * a ** 4)
    root = np.sqrt(8 * a)
    term2 = root / (a - x)
    term3 = (x - a - a * np.log(x / a)) ** -1.5
    term1 = np.log(x / a) * np.where(x < a, term2 - term3, term2 + term3) - np.sqrt(2 / a) * (a + x) / (a - x) ** 2
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    far = -stirling * x * term1 / root
    large = np.where((0.9 * a <= x) & (x <= 1.1 * a), near, far)
    # otherwise: a bivariate rational approximation in log(x / a) and log(a)
    u, v = np.log(x / a), np.log(a)
    c = [_GAMMA_UV[0][i] + u * (_GAMMA_UV[1][i] + u * _GAMMA_UV[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    rational = np.exp(p / q)
    return np.where(x < 0.8, small, np.where(a > 8, large, rational))


_GAMMA_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915,
              -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
              0.00085092367, -1.5247877e-07))


def _beta_grad_alpha_small(x, a, b):
    """d x / d a for x ~ Beta(a, b) near 0 (a Taylor expansion), scaled by 1 / (1 - x)."""
    factor = _digamma64(a) - _digamma64(a + b) - np.log(x)
    numer = np.ones_like(x)
    series = numer / a * (factor + 1 / a)
    for i in range(1, 11):
        numer = numer * (i - b) * x / i
        denom = a + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * (1 - x) ** -b * series
    return np.where(np.isnan(result), 0.0, result)


def _beta_grad_beta_small(x, a, b):
    """d x / d b for x ~ Beta(a, b) near 0 (a Taylor expansion), scaled as above."""
    factor = _digamma64(a + b) - _digamma64(b)
    numer, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / a
    for i in range(1, 9):
        numer = numer * -x / i
        dbetas = dbetas * (b - i) + betas
        betas = betas * (b - i)
        series = series + numer / (a + i) * (dbetas + factor * betas)
    result = -((1 - x) ** (1 - b)) * series
    return np.where(np.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(x, a, b):
    """The same for large a and b: a saddle-point expansion (a polynomial near the mean)."""
    total = a + b
    mean = a / total
    std = np.sqrt(a * b / (total + 1)) / total
    poly = 47 * x * b ** 4 + a * ((43 + 20 * (16 + 27 * b) * x) * b ** 3 + a * (
        3 * (59 + 180 * b - 90 * x) * b * b + a * ((453 + 1620 * b * (1 - x) - 455 * x) * b + a * (
            8 * (1 - x) * (135 * b - 11)))))
    prefactor_num = (1 + 12 * a) * (1 + 12 * b) / (total * total)
    prefactor_den = 12960 * a ** 3 * b * b * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / np.sqrt(2 * a * b / total)
    stirling = ((1 + 1 / (12 * a) + 1 / (288 * a * a)) * (1 + 1 / (12 * b) + 1 / (288 * b * b))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    axbx = a * (x - 1) + b * x
    term1 = ((2 * a * a * (x - 1) + a * b * (x - 1) - x * b * b)
             / (np.sqrt(2 * a / b) * total ** 1.5 * axbx * axbx))
    term2 = 0.5 * np.log(a / (total * x))
    term3 = np.sqrt(8 * a * b / total) / (b * x + a * (x - 1))
    term4 = (b * np.log(b / (total * (1 - x))) + a * np.log(a / (total * x))) ** -1.5
    far = stirling * prefactor * (term1 + term2 * (term3 + np.where(x < mean, term4, -term4)))
    return np.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def _dirichlet_grad(x, alpha, total):
    x, a, total = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (x, alpha, total)))
    b = total - a
    boundary = total * x * (1 - x)
    # a rational correction to an analytic approximation
    u = np.log(x)
    la = np.log(a) - u
    lb = np.log(total) - la
    p, q = np.zeros_like(x), np.zeros_like(x)
    for i, pu in enumerate((1, u, u * u)):
        for j, pa in enumerate((1, la, la * la)):
            cp, cq = _DIRICHLET_C[0][i][j], _DIRICHLET_C[1][i][j]
            p = p + pu * pa * (cp[0] + lb * (cp[1] + lb * (cp[2] + lb * cp[3])))
            q = q + pu * pa * (cq[0] + lb * (cq[1] + lb * (cq[2] + lb * cq[3])))
    approx = x * (_digamma64(total) - _digamma64(a)) / b
    out = np.where((a > 6) & (b > 6), _beta_grad_alpha_mid(x, a, b), p / q * approx)
    out = np.where((x >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1 - x, b, a), out)
    return np.where((x <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x, a, b), out)


_DIRICHLET_C = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))))


def _infer_same_float(*inputs):
    dtypes = {t.dtype for t in inputs}
    if len(dtypes) != 1 or not inputs[0].dtype.is_floating_point:
        raise TypeError(f"expected floating point tensors of one dtype, got {[str(t.dtype) for t in inputs]}")
    return broadcast_shapes(*(t.shape for t in inputs)), inputs[0].dtype


def _cast(fn):
    def impl(*arrays):
        return fn(*arrays).astype(arrays[0].dtype, copy=False)

    impl.__name__ = fn.__name__
    return _quiet(impl)


# standard_gamma_grad(alpha, x): dx/dalpha of x ~ Gamma(alpha, 1)
STANDARD_GAMMA_GRAD = defop(
    "standard_gamma_grad", infer=_infer_same_float, impl=_cast(_standard_gamma_grad), kind="elementwise",
    differentiable=False, c="tg_standard_gamma_grad({0}, {1})",
    # (equal shapes: PyTorch's _standard_gamma_grad does not broadcast its arguments)
    sample=lambda: [(("positive", "positive"), {}), (("above_one", "positive"), {})])
# dirichlet_grad(x, alpha, total): dx/dalpha of x ~ Beta(alpha, total - alpha), over (1 - x)
DIRICHLET_GRAD = defop(
    "dirichlet_grad", infer=_infer_same_float, impl=_cast(_dirichlet_grad), kind="elementwise",
    differentiable=False, c="tg_dirichlet_grad({0}, {1}, {2})",
    sample=lambda: [(("probability", "probability", "above_one"), {})])
