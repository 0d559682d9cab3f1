"""Elementwise primitives: unary math, binary arithmetic and comparisons, where, clamp, cast.

Each op is one registration made by a family factory (``unary``, ``binary``, ``compare``);
rules are written with tracegrad ops so they differentiate again and trace.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import creation
from ..core import dtypes as _dt
from .registry import defop
from .shapes import broadcast_shapes

def _float_result(x):
    return x.dtype if x.dtype.is_floating_point else _dt.get_default_dtype()


def _infer_unary_float(x, **_):
    return tuple(x.shape), _float_result(x)


def _infer_unary_same(x, **_):
    return tuple(x.shape), x.dtype


def _quiet_state():
    """(context variable, value) that silence NumPy's floating-point warnings while set: what
    ``np.errstate(all="ignore")`` sets, made once. Entering a new errstate costs ~1 us, a
    sixth of an eager elementwise op; setting the variable ~0.1 us. None where NumPy keeps its
    error state otherwise (the impls then enter np.errstate)."""
    try:  # (here: a private NumPy module, absent from some versions)
        from numpy._core import _multiarray_umath as umath

        return umath._extobj_contextvar, umath._make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):
        return None


_QUIET = _quiet_state()


def _quiet(fn):
    """``fn`` without NumPy's warnings (overflow, invalid, divide): PyTorch gives inf and nan
    silently, and so do tracegrad's ops."""
    if _QUIET is None:
        def impl(*arrays, **attrs):
            with np.errstate(all="ignore"):
                return fn(*arrays, **attrs)
    else:
        var, quiet = _QUIET

        def impl(*arrays, **attrs):
            token = var.set(quiet)
            try:
                return fn(*arrays, **attrs)
            finally:
                var.reset(token)

    impl.__name__ = getattr(fn, "__name__", "impl")
    return impl


def on_floats(fn):
    """``fn`` of one array, given floats: an integer or bool array is first converted to the
    default float dtype, the one _infer_unary_float gives its result, so that ``fn``'s own
    casts to its input's dtype do not truncate (sigmoid of an int64 tensor gave zeros)."""
    def impl(x, **attrs):
        if x.dtype.kind != "f":
            x = x.astype(_dt.get_default_dtype().np)
        return fn(x, **attrs)
    return impl


def unary(name, fn, vjp, jvp, c, save=(0,), float_only=True, differentiable=True, c_int=None):
    infer = _infer_unary_float if float_only else _infer_unary_same
    fn = on_floats(fn) if float_only else fn
    return defop(name, infer=infer, impl=_quiet(fn), vjp=vjp, jvp=jvp, save=save, c=c, c_int=c_int,
                 kind="elementwise", differentiable=differentiable,
                 sample=lambda: [((_sample_for(name),), {})])


def _sample_for(name):
    # a domain where the function is smooth, for the registry-driven tests
    return {"log": "positive", "sqrt": "positive", "rsqrt": "positive", "log1p": "positive",
            "abs": "nonzero", "sign": "nonzero", "relu": "nonzero", "tan": "small", "asin": "small",
            "acos": "small", "atanh": "small", "acosh": "above_one", "lgamma": "positive",
            "digamma": "positive", "erfinv": "small", "ndtri": "probability", "bessel_y0": "positive",
            "bessel_y1": "positive"}.get(name, "any")


def _infer_binary(a, b, **_):  # (a and b: tensors, or IR values in the passes)
    if a.dtype is not b.dtype:
        raise TypeError(f"binary primitive expects equal dtypes, got {a.dtype} and {b.dtype}")
    return broadcast_shapes(a.shape, b.shape), a.dtype


def _infer_compare(a, b, **_):
    return broadcast_shapes(a.shape, b.shape), _dt.bool_


def _binary_samples():
    # equal shapes, then both directions of broadcasting
    return [(("any", "any"), {}), ((("any", (3, 1)), ("any", (4,))), {})]


def binary(name, fn, vjp, jvp, c, save=(0, 1), sample=_binary_samples, no_derivative=(),
           no_derivative_label=None, c_int=None):
    return defop(name, infer=_infer_binary, impl=_quiet(fn), vjp=vjp, jvp=jvp, save=save, c=c, c_int=c_int,
                 kind="elementwise", sample=sample, no_derivative=no_derivative,
                 no_derivative_label=no_derivative_label)


def compare(name, fn, c):
    return defop(name, infer=_infer_compare, impl=fn, c=c, kind="elementwise",
                 differentiable=False, sample=_binary_samples)


# ----------------------------------------------------------------------------- unary math
# ``{0}`` is the operand in C; generated C includes <tgmath.h>, so exp() serves float and double.
NEG = unary("neg", np.negative, save=(), float_only=False, vjp=lambda ctx, g: (-g,),
            jvp=lambda ctx, t: -t, c="(-{0})")
EXP = unary("exp", np.exp, save=("out",), vjp=lambda ctx, g: (g * ctx.out,),
            jvp=lambda ctx, t: t * ctx.out, c="exp({0})")
LOG = unary("log", np.log, vjp=lambda ctx, g: (g / ctx.input(0),),
            jvp=lambda ctx, t: t / ctx.input(0), c="log({0})")
LOG1P = unary("log1p", np.log1p, vjp=lambda ctx, g: (g / (ctx.input(0) + 1),),
              jvp=lambda ctx, t: t / (ctx.input(0) + 1), c="log1p({0})")
EXPM1 = unary("expm1", np.expm1, save=("out",), vjp=lambda ctx, g: (g * (ctx.out + 1),),
              jvp=lambda ctx, t: t * (ctx.out + 1), c="expm1({0})")
SQRT = unary("sqrt", np.sqrt, save=("out",), vjp=lambda ctx, g: (g / (2 * ctx.out),),
             jvp=lambda ctx, t: t / (2 * ctx.out), c="sqrt({0})")
RSQRT = unary("rsqrt", lambda x: 1 / np.sqrt(x), save=("out",),
              vjp=lambda ctx, g: (g * -0.5 * ctx.out ** 3,),
              jvp=lambda ctx, t: t * -0.5 * ctx.out ** 3, c="(1 / sqrt({0}))")
ABS = unary("abs", np.abs, float_only=False, vjp=lambda ctx, g: (g * ctx.input(0).sign(),),
            jvp=lambda ctx, t: t * ctx.input(0).sign(), c="fabs({0})", c_int="({0} < 0 ? -{0} : {0})")


def _sign(x):
    """PyTorch's sign: (x > 0) - (x < 0), so 0 for NaN (NumPy's np.sign gives NaN)."""
    if x.dtype.kind != "f":
        return np.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


SIGN = unary("sign", _sign, save=(), float_only=False,
             vjp=lambda ctx, g: (g * 0,), jvp=lambda ctx, t: t * 0,
             c="(({0} > 0) - ({0} < 0))")
SIN = unary("sin", np.sin, vjp=lambda ctx, g: (g * ctx.input(0).cos(),),
            jvp=lambda ctx, t: t * ctx.input(0).cos(), c="sin({0})")
COS = unary("cos", np.cos, vjp=lambda ctx, g: (-g * ctx.input(0).sin(),),
            jvp=lambda ctx, t: -t * ctx.input(0).sin(), c="cos({0})")
TAN = unary("tan", np.tan, save=("out",), vjp=lambda ctx, g: (g * (1 + ctx.out * ctx.out),),
            jvp=lambda ctx, t: t * (1 + ctx.out * ctx.out), c="tan({0})")
TANH = unary("tanh", np.tanh, save=("out",), vjp=lambda ctx, g: (g * (1 - ctx.out * ctx.out),),
             jvp=lambda ctx, t: t * (1 - ctx.out * ctx.out), c="tanh({0})")

# inverse trigonometric and hyperbolic functions; the rules are written so that they
# differentiate again (x * x rather than x ** 2, whose derivative needs a log)
ASIN = unary("asin", np.arcsin, vjp=lambda ctx, g: (g * (1 - _sq(ctx.input(0))).rsqrt(),),
             jvp=lambda ctx, t: t * (1 - _sq(ctx.input(0))).rsqrt(), c="asin({0})")
ACOS = unary("acos", np.arccos, vjp=lambda ctx, g: (-g * (1 - _sq(ctx.input(0))).rsqrt(),),
             jvp=lambda ctx, t: -t * (1 - _sq(ctx.input(0))).rsqrt(), c="acos({0})")
ATAN = unary("atan", np.arctan, vjp=lambda ctx, g: (g / (1 + _sq(ctx.input(0))),),
             jvp=lambda ctx, t: t / (1 + _sq(ctx.input(0))), c="atan({0})")
SINH = unary("sinh", np.sinh, vjp=lambda ctx, g: (g * ctx.input(0).cosh(),),
             jvp=lambda ctx, t: t * ctx.input(0).cosh(), c="sinh({0})")
COSH = unary("cosh", np.cosh, vjp=lambda ctx, g: (g * ctx.input(0).sinh(),),
             jvp=lambda ctx, t: t * ctx.input(0).sinh(), c="cosh({0})")
ASINH = unary("asinh", np.arcsinh, vjp=lambda ctx, g: (g * (_sq(ctx.input(0)) + 1).rsqrt(),),
              jvp=lambda ctx, t: t * (_sq(ctx.input(0)) + 1).rsqrt(), c="asinh({0})")
ACOSH = unary("acosh", np.arccosh, vjp=lambda ctx, g: (g * (_sq(ctx.input(0)) - 1).rsqrt(),),
              jvp=lambda ctx, t: t * (_sq(ctx.input(0)) - 1).rsqrt(), c="acosh({0})")
ATANH = unary("atanh", np.arctanh, vjp=lambda ctx, g: (g / (1 - _sq(ctx.input(0))),),
              jvp=lambda ctx, t: t / (1 - _sq(ctx.input(0))), c="atanh({0})")
EXP2 = unary("exp2", np.exp2, save=("out",), vjp=lambda ctx, g: (g * ctx.out * _LN2,),
             jvp=lambda ctx, t: t * ctx.out * _LN2, c="exp2({0})")


def _sq(x):
    return x * x


_LN2 = math.log(2.0)


def _sigmoid(x):
    # stable for large |x|: exp of a non-positive number only
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


SIGMOID = unary("sigmoid", _sigmoid, save=("out",),
                vjp=lambda ctx, g: (g * ctx.out * (1 - ctx.out),),
                jvp=lambda ctx, t: t * ctx.out * (1 - ctx.out),
                c="(1 / (1 + exp(-({0}))))")


def _special(name):
    """scipy.special's ``name`` (erf, erfc) where SciPy is installed, else math's per element."""
    def impl(x):
        try:  # (at call time: SciPy is an optional dependency, and costly to import)
            from scipy import special
        except ImportError:
            return np.vectorize(getattr(math, name), otypes=[x.dtype])(x)
        return getattr(special, name)(x).astype(x.dtype, copy=False)

    impl.__name__ = name
    return impl


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
ERF = unary("erf", _special("erf"),
            vjp=lambda ctx, g: (g * _TWO_OVER_SQRT_PI * (-(ctx.input(0) * ctx.input(0))).exp(),),
            jvp=lambda ctx, t: t * _TWO_OVER_SQRT_PI * (-(ctx.input(0) * ctx.input(0))).exp(),
            c="erf({0})")
# erfc(x) keeps its precision where 1 - erf(x) rounds to 0 (x > 4 in float32)
ERFC = unary("erfc", _special("erfc"),
             vjp=lambda ctx, g: (-g * _TWO_OVER_SQRT_PI * (-(ctx.input(0) * ctx.input(0))).exp(),),
             jvp=lambda ctx, t: -t * _TWO_OVER_SQRT_PI * (-(ctx.input(0) * ctx.input(0))).exp(),
             c="erfc({0})")
# relu's derivative at 0 is 0, as in PyTorch (threshold_backward uses x > 0)
RELU = unary("relu", lambda x: np.maximum(x, 0).astype(x.dtype, copy=False), save=("out",),
             float_only=False,
             vjp=lambda ctx, g: (g * (ctx.out > 0).to(g.dtype),),
             jvp=lambda ctx, t: t * (ctx.out > 0).to(t.dtype),
             c="({0} > 0 ? {0} : 0)")
LOGICAL_NOT = defop("logical_not", infer=lambda x: (tuple(x.shape), _dt.bool_),
                    impl=np.logical_not, c="(!{0})", kind="elementwise", differentiable=False,
                    sample=lambda: [(("bool",), {})])
def _rounding(name, fn, c):
    """A piecewise-constant op: its gradient is 0 (PyTorch's convention at the jumps too)."""
    return unary(name, fn, save=(), float_only=False, vjp=lambda ctx, g: (g * 0,),
                 jvp=lambda ctx, t: t * 0, c=c)


FLOOR = _rounding("floor", np.floor, "floor({0})")
CEIL = _rounding("ceil", np.ceil, "ceil({0})")
TRUNC = _rounding("trunc", np.trunc, "trunc({0})")
# half to even, as torch.round and np.round; C's rint rounds so in the default rounding mode
ROUND = _rounding("round", np.round, "rint({0})")


# ----------------------------------------------------------------------------- binary
def _pow_vjp(ctx, g):
    a, b = ctx.input(0), ctx.input(1)
    ga = gb = None
    if ctx.needs_input_grad[0]:
        # d/da a**b = b * a**(b-1), defined as 0 where b == 0 (PyTorch's convention)
        ga = (g * b * a ** (b - 1)).where(b != 0, 0.0)
    if ctx.needs_input_grad[1]:
        out = a ** b
        gb = (g * out * a.log()).where((a != 0) | (b < 0), 0.0)
    return ga, gb


def _pow_jvp(ctx, ta, tb):
    a, b = ctx.input(0), ctx.input(1)
    res = None
    if ta is not None:
        res = (ta * b * a ** (b - 1)).where(b != 0, 0.0)
    if tb is not None:
        part = (tb * a ** b * a.log()).where((a != 0) | (b < 0), 0.0)
        res = part if res is None else res + part
    return res


def _lin_jvp(sign_b):
    def jvp(ctx, ta, tb):
        if tb is None:
            return ta
        tb = tb if sign_b > 0 else -tb
        return tb if ta is None else ta + tb

    return jvp


def _mul_jvp(ctx, ta, tb):
    res = None if ta is None else ta * ctx.input(1)
    if tb is not None:
        part = ctx.input(0) * tb
        res = part if res is None else res + part
    return res


def _div_jvp(ctx, ta, tb):
    a, b = ctx.input(0), ctx.input(1)
    res = None if ta is None else ta / b
    if tb is not None:
        part = -tb * a / (b * b)
        res = part if res is None else res + part
    return res


def _minmax_vjp(pick_a):
    # ties split the gradient evenly, like torch.maximum / torch.minimum
    def vjp(ctx, g):
        a, b = ctx.input(0), ctx.input(1)
        wins = pick_a(a, b).to(g.dtype)
        ties = (a == b).to(g.dtype)
        wa = wins + ties * 0.5
        return g * wa, g * (1 - wa)

    return vjp


def _minmax_jvp(pick_a):
    def jvp(ctx, ta, tb):
        a, b = ctx.input(0), ctx.input(1)
        wa = pick_a(a, b).to(a.dtype) + (a == b).to(a.dtype) * 0.5
        res = None if ta is None else ta * wa
        if tb is not None:
            res = tb * (1 - wa) if res is None else res + tb * (1 - wa)
        return res

    return jvp


def _partials(da, db):
    """(vjp, jvp) of a binary op from its partial derivatives, functions of the ctx (None:
    the derivative is 1): g * da, g * db and ta * da + tb * db."""
    def times(grad, d, ctx):
        return grad if d is None else grad * d(ctx)

    def vjp(ctx, g):
        return (times(g, da, ctx) if ctx.needs_input_grad[0] else None,
                times(g, db, ctx) if ctx.needs_input_grad[1] else None)

    def jvp(ctx, ta, tb):
        res = None if ta is None else times(ta, da, ctx)
        if tb is not None:
            part = times(tb, db, ctx)
            res = part if res is None else res + part
        return res

    return vjp, jvp


def _integer_divisor_checked(fn):
    """``fn`` raising ZeroDivisionError for an integer divisor holding a zero (PyTorch's error
    says "ZeroDivisionError"; a compiled program flags it: see integer division below)."""
    def impl(a, b):
        if b.dtype.kind in "iu" and not np.all(b):
            raise ZeroDivisionError("integer division by zero")
        return fn(a, b)
    return impl


def _remainder(a, b):
    """Python's and PyTorch's remainder (the sign of the divisor), from fmod as torch does."""
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m).astype(m.dtype, copy=False)


def _true_divide(a, b):
    return np.divide(a, b)


ADD = binary("add", np.add, save=(), vjp=lambda ctx, g: (g, g), jvp=_lin_jvp(1), c="({0} + {1})")
SUB = binary("sub", np.subtract, save=(), vjp=lambda ctx, g: (g, -g), jvp=_lin_jvp(-1),
             c="({0} - {1})")
MUL = binary("mul", np.multiply,
             vjp=lambda ctx, g: (g * ctx.input(1) if ctx.needs_input_grad[0] else None,
                                 g * ctx.input(0) if ctx.needs_input_grad[1] else None),
             jvp=_mul_jvp, c="({0} * {1})")
DIV = binary("div", _true_divide,
             vjp=lambda ctx, g: (g / ctx.input(1) if ctx.needs_input_grad[0] else None,
                                 -g * ctx.input(0) / (ctx.input(1) * ctx.input(1))
                                 if ctx.needs_input_grad[1] else None),
             jvp=_div_jvp, c="({0} / {1})")


def _power(a, b):
    """np.power, but integers to negative powers as PyTorch's: 1 for a base of 1, +-1 for -1
    (by the exponent's parity), else 0 (NumPy raises)."""
    if b.dtype.kind in "iu" and np.any(b < 0):
        out = np.power(a, np.where(b < 0, 0, b))
        special = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
        return np.where(b < 0, special, out).astype(out.dtype, copy=False)
    return np.power(a, b)


# a positive base keeps a ** b real for every exponent
POW = binary("pow", _power, vjp=_pow_vjp, jvp=_pow_jvp, c="pow({0}, {1})",
             c_int="(({ctype})tg_ipow({0}, {1}))",  # (exact: C's pow is double's)
             sample=lambda: [(("positive", "any"), {}), ((("positive", (3, 1)), ("any", (4,))), {})])
def _atan2_partial(ctx, sign, k):
    y, x = ctx.input(0), ctx.input(1)
    return sign * ctx.input(k) / (x * x + y * y)


ATAN2 = binary("atan2", np.arctan2, *_partials(lambda ctx: _atan2_partial(ctx, 1, 1),
                                               lambda ctx: _atan2_partial(ctx, -1, 0)),
               c="atan2({0}, {1})")
HYPOT = binary("hypot", np.hypot, *_partials(lambda ctx: ctx.input(0) / ctx.out,
                                             lambda ctx: ctx.input(1) / ctx.out),
               c="hypot({0}, {1})", save=(0, 1, "out"))


def _infer_floats(name):
    def infer(a, b, **_):
        if a.dtype is not b.dtype:
            raise TypeError(f"{name} primitive expects equal dtypes, got {a.dtype} and {b.dtype}")
        if not a.dtype.is_floating_point:
            raise RuntimeError(f"\"{name}_cpu\" not implemented for '{a.dtype.torch_name}'")
        return broadcast_shapes(a.shape, b.shape), a.dtype
    return infer


# the next representable value after {0} towards {1} (tgmath.h: nextafterf for floats); not
# differentiable, as in PyTorch
NEXTAFTER = defop("nextafter", infer=_infer_floats("nextafter"), impl=np.nextafter, c="nextafter({0}, {1})",
                  kind="elementwise", differentiable=False, sample=_binary_samples)


# (the C of integer fmod, remainder and division: see "integer division" below)
def _integer_c(on_minus_one, otherwise):
    """C for an integer division op: 0 and the failure flag for a zero divisor, ``on_minus_one``
    for a divisor of -1, else ``otherwise`` (where {0} / {1} and {0} % {1} are safe)."""
    return ("({1} == 0 ? (tg_fail = TG_FAIL_ZERO_DIVISION, ({ctype})0) : {1} == -1 ? %s : ({ctype})(%s))"
            % (on_minus_one, otherwise))


_NEGATE = "({ctype})(0 - (uint64_t){0})"  # (-x, wrapping at INT_MIN)
_SIGNS_DIFFER = "({0} % {1} != 0 && (({0} % {1} < 0) != ({1} < 0)))"  # (floor and trunc differ)


# the derivative in the divisor is -trunc(a / b) (fmod) or -floor(a / b) (remainder), as in
# PyTorch; the samples keep the divisor away from 0
# (on integers: tests/test_arithmetic_semantics.py)
_MOD_SAMPLES = lambda: [(("any", "nonzero"), {}), ((("any", (3, 1)), ("nonzero", (4,))), {})]
FMOD = binary("fmod", _integer_divisor_checked(np.fmod),
              *_partials(None, lambda ctx: -(ctx.input(0) / ctx.input(1)).trunc()),
              c="fmod({0}, {1})", c_int=_integer_c("({ctype})0", "{0} % {1}"), sample=_MOD_SAMPLES)
REMAINDER = binary("remainder", _integer_divisor_checked(_remainder),
                   *_partials(None, lambda ctx: -(ctx.input(0) / ctx.input(1)).floor()),
                   c="((fmod({0}, {1}) != 0 && ((fmod({0}, {1}) < 0) != ({1} < 0))) "
                     "? fmod({0}, {1}) + {1} : fmod({0}, {1}))",
                   c_int=_integer_c("({ctype})0", _SIGNS_DIFFER + " ? {0} % {1} + {1} : {0} % {1}"),
                   sample=_MOD_SAMPLES)


# ----------------------------------------------------------------------------- integer division
# Exact on every integer (not through float64, which rounds above 2^53), as PyTorch's. A zero
# divisor raises ZeroDivisionError (PyTorch's RuntimeError says "ZeroDivisionError"); a
# compiled program flags it (tg_fail) and the interpreter then raises. C's INT_MIN / -1 traps:
# a divisor of -1 is taken apart (x / -1 wraps, as NumPy's and PyTorch's; x % -1 is 0).
def _trunc_divide(a, b):
    q = np.floor_divide(a, b)
    return np.where((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q).astype(q.dtype, copy=False)


def _infer_division(category_ok):
    def infer(a, b, **_):
        if a.dtype is not b.dtype or not category_ok(a.dtype.category):
            raise TypeError(f"division primitive: unexpected dtypes {a.dtype} and {b.dtype}")
        return broadcast_shapes(a.shape, b.shape), a.dtype
    return infer


_INT_SAMPLES = lambda: [(("signed_int", "nonzero_int"), {}),
                        ((("signed_int", (3, 1)), ("nonzero_int", (4,))), {})]
# floor division of floats is NumPy's and PyTorch's (both CPython's float //: from fmod, so
# 1.0 // 0.1 is 9, not floor(1.0 / 0.1) = 10; inf // x is nan): runtime.h.j2 tg_floor_divide.
# Piecewise constant, so its gradient is 0 (PyTorch's).
_ZERO_PARTIALS = dict(vjp=lambda ctx, g: tuple(g * 0 if need else None for need in ctx.needs_input_grad),
                      jvp=lambda ctx, ta, tb: ((ta if ta is not None else tb) * 0).expand(
                          broadcast_shapes(*ctx.shapes)), save=())
FLOOR_DIVIDE = defop("floor_divide", infer=_infer_division(lambda c: c in (1, 2)),
                     impl=_integer_divisor_checked(_quiet(np.floor_divide)), kind="elementwise",
                     sample=lambda: _INT_SAMPLES() + _MOD_SAMPLES(), **_ZERO_PARTIALS,
                     c="tg_floor_divide_{ctype}({0}, {1})",
                     c_int=_integer_c(_NEGATE, "{0} / {1} - " + _SIGNS_DIFFER))
TRUNC_DIVIDE = defop("trunc_divide", infer=_infer_division(lambda c: c == 1),
                     impl=_integer_divisor_checked(_quiet(_trunc_divide)), kind="elementwise",
                     differentiable=False, sample=_INT_SAMPLES, c=_integer_c(_NEGATE, "{0} / {1}"))

MAXIMUM = binary("maximum", np.maximum, vjp=_minmax_vjp(lambda a, b: a > b),
                 jvp=_minmax_jvp(lambda a, b: a > b), c="({0} > {1} ? {0} : {1})")
MINIMUM = binary("minimum", np.minimum, vjp=_minmax_vjp(lambda a, b: a < b),
                 jvp=_minmax_jvp(lambda a, b: a < b), c="({0} < {1} ? {0} : {1})")

EQ = compare("eq", np.equal, "({0} == {1})")
NE = compare("ne", np.not_equal, "({0} != {1})")
LT = compare("lt", np.less, "({0} < {1})")
LE = compare("le", np.less_equal, "({0} <= {1})")
GT = compare("gt", np.greater, "({0} > {1})")
GE = compare("ge", np.greater_equal, "({0} >= {1})")
LOGICAL_AND = compare("logical_and", np.logical_and, "({0} && {1})")
LOGICAL_OR = compare("logical_or", np.logical_or, "({0} || {1})")


# ----------------------------------------------------------------------------- where, clamp, cast
def _infer_where(cond, a, b):
    if cond.dtype is not _dt.bool_:
        raise TypeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {cond.dtype}")
    if a.dtype is not b.dtype:
        raise TypeError(f"where primitive expects equal dtypes, got {a.dtype} and {b.dtype}")
    return broadcast_shapes(cond.shape, a.shape, b.shape), a.dtype


def _where_vjp(ctx, g):
    # (zeros, not g * 0: a nan or inf cotangent at a masked-off place must not reach the
    # other branch, as PyTorch's; e.g. sqrt of a where whose other branch is nan)
    cond, zero = ctx.input(0), creation.zeros((), dtype=g.dtype)
    return None, WHERE(cond, g, zero), WHERE(cond, zero, g)


def _where_jvp(ctx, tc, ta, tb):
    # (the primitive's branches share a dtype, and so do their tangents)
    zero = creation.zeros((), dtype=(ta if ta is not None else tb).dtype)
    return WHERE(ctx.input(0), ta if ta is not None else zero, tb if tb is not None else zero)


WHERE = defop("where", infer=_infer_where, impl=np.where, vjp=_where_vjp, jvp=_where_jvp, save=(0,),
              nondiff_inputs=(0,), c="({0} ? {1} : {2})", kind="elementwise",
              sample=lambda: [(("bool", "any", "any"), {})])


def _infer_clamp(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return tuple(x.shape), x.dtype


def _clamp_impl(x, min=None, max=None):
    return np.clip(x, min, max).astype(x.dtype, copy=False)


def _clamp_mask(x, min, max):
    # gradient passes where min <= x <= max (inclusive bounds, as in PyTorch)
    mask = None
    if min is not None:
        mask = x >= min
    if max is not None:
        m = x <= max
        mask = m if mask is None else mask & m
    return mask


def _bounds(ctx):
    return ctx.attrs.get("min"), ctx.attrs.get("max")  # either may be omitted


CLAMP = defop("clamp", infer=_infer_clamp, impl=_clamp_impl, save=(0,), kind="elementwise",
              vjp=lambda ctx, g: (g * _clamp_mask(ctx.input(0), *_bounds(ctx)).to(g.dtype),),
              jvp=lambda ctx, t: t * _clamp_mask(ctx.input(0), *_bounds(ctx)).to(t.dtype),
              c=None, sample=lambda: [(("any",), {"min": -0.5, "max": 0.7}),
                                      (("any",), {"min": -0.3})])


def _cast_vjp(ctx, g):
    src = ctx.dtypes[0]
    return (g.to(src) if src.is_floating_point else None,)


CAST = defop("cast", infer=lambda x, dtype: (tuple(x.shape), dtype),
             impl=lambda x, dtype: x.astype(dtype.np), save=(), kind="elementwise",
             vjp=_cast_vjp, jvp=lambda ctx, t: t.to(ctx.dtype), c="(({ctype}){0})",
             sample=lambda: [(("any",), {"dtype": _dt.float64})])
