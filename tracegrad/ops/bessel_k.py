"""Modified Bessel functions of the second kind: ``modified_bessel_k0``, ``modified_bessel_k1``
and their scaled forms ``e^x K(x)``, by Cephes' Chebyshev expansions as PyTorch evaluates them
(the same coefficients and Clenshaw loop): on (0, 2] ``-log(x/2) I0(x) + A(x^2 - 2)`` (K1:
``log(x/2) I1(x) + A(x^2 - 2) / x``), above 2 ``e^-x B(8/x - 2) / sqrt(x)``. Both backends run
this in double (the C twin: ``tg_bessel_k`` in compiler/backends/c/templates/special_polynomials.h.j2);
float32 results are the double values rounded. As PyTorch's: inf at 0, NaN below 0 (and at
NaN), 0 at +inf; no derivative (PyTorch defines none: no gradient flows).

>>> import tracegrad as tg
>>> tg.special.modified_bessel_k0(tg.tensor([0.5, 1.0, 3.0]))
tensor([0.9244, 0.4210, 0.0347])
"""
from __future__ import annotations

import numpy as np

from .bessel import _modified
from .elementwise import _infer_unary_float, _quiet, on_floats
from .registry import defop

# Cephes k0.c / k1.c (PyTorch's aten/src/ATen/native/Math.h): A on (0, 2], B above 2
_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
         1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
         1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
         -5.35327393233902768720e-01)
_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
         2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
         -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
         2.44030308206595545468e+00)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
         -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
         -3.53155960776544875667e-01, 1.52530022733894777053e+00)
_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
         -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
         1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
         2.72062619048444266945e+00)
_LEAST_SUBNORMAL32 = float(np.float32(1.4e-45))
_COEFFICIENTS = {0: (_K0_A, _K0_B), 1: (_K1_A, _K1_B)}
_I0, _I1 = _modified(0, False), _modified(1, False)


def _chebyshev_series(t, coefficients):
    """Cephes' chbevl (Clenshaw's recurrence) in PyTorch's order of operations."""
    p, q, a = np.zeros_like(t), np.zeros_like(t), np.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        p, q = q, a
        a = t * q - p + c
    return 0.5 * (a - p)


def _bessel_k(order, scaled):
    small_coefficients, large_coefficients = _COEFFICIENTS[order]

    def impl(x):
        x64 = np.asarray(x, dtype=np.float64)
        small = (x64 > 0) & (x64 <= 2)
        xs = np.where(small, x64, 1.0)  # (each branch evaluated where it is defined)
        series = _chebyshev_series(xs * xs - 2, small_coefficients)
        if order == 0:
            near = series - np.log(0.5 * xs) * _I0(xs)
        else:
            near = np.log(0.5 * xs) * _I1(xs) + series / xs
        if scaled:
            near = near * np.exp(xs)
        xl = np.where(small, 4.0, x64)
        series = _chebyshev_series(8 / xl - 2, large_coefficients)
        far = series / np.sqrt(xl) if scaled else np.exp(-xl) * series / np.sqrt(xl)
        value = np.where(small, near, far)  # (NaN stays NaN through the far branch, as PyTorch's)
        value = np.where(x64 == 0, np.inf, np.where(x64 < 0, np.nan, value))
        if (order == 1 or scaled) and x.dtype == np.float32:  # (PyTorch's float arithmetic: at the
            # least subnormal T(0.5) * x rounds to 0: K1's log(0) I1(x) + A / x is -inf + inf, NaN,
            # and scaled K0's -log(0) I0(x) is inf; unscaled K0 halves x in double there)
            value = np.where(x64 == _LEAST_SUBNORMAL32, np.nan if order == 1 else np.inf, value)
        return value.astype(x.dtype, copy=False)

    impl.__name__ = f"{'scaled_' if scaled else ''}modified_bessel_k{order}"
    return impl


def _op(order, scaled):
    name = f"{'scaled_' if scaled else ''}modified_bessel_k{order}"
    return defop(name, infer=_infer_unary_float, impl=_quiet(on_floats(_bessel_k(order, scaled))), kind="elementwise",
                 differentiable=False, c=f"tg_bessel_k({{0}}, {order}, {int(scaled)}, sizeof({{0}}) == sizeof(float))",
                 sample=lambda: [(("positive",), {})])


MODIFIED_BESSEL_K0, MODIFIED_BESSEL_K1 = _op(0, False), _op(1, False)
SCALED_MODIFIED_BESSEL_K0, SCALED_MODIFIED_BESSEL_K1 = _op(0, True), _op(1, True)
