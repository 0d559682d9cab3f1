"""The C backend's lowering rules (found by the op object) and its runtime (split by theme,
included only where a program calls it)."""
import re
import shutil
import subprocess
import warnings

import pytest

import tracegrad as tg
from tracegrad.compiler.backends.c import render_template, runtime
from tracegrad.compiler.backends.c.rules import RULES, Unsupported
from tracegrad.ops import elementwise as E
from tracegrad.ops.registry import REGISTRY, OpDef


def _source(fn, *args):
    f = tg.compile(fn, backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (an interpreter fallback would warn)
        f(*args)
    return f.programs[0].executable.source


def _themes(source):
    return re.findall(r"---- runtime theme (\w+):", source)


def test_tanh_sum_is_a_small_program_without_factorizations_or_special_functions():
    src = _source(lambda x: x.tanh().sum(), tg.randn(16))
    assert len(src.splitlines()) < 250
    assert _themes(src) == ["fast_exp"]
    for name in ("tg_lu_", "tg_cholesky", "tg_eigh", "tg_svd", "tg_ldl", "tg_erfinv", "tg_digamma",
                 "tg_gemm_", "tg_argsort"):
        assert name not in src


def test_a_program_includes_exactly_the_themes_it_calls():
    x = tg.rand(4, 4) * 0.5
    assert _themes(_source(lambda x: tg.special.erfinv(x).sum(), x)) == ["special"]
    spd = x @ x.T + tg.eye(4)
    assert _themes(_source(lambda a: tg.linalg.cholesky(a), spd)) == ["lu", "lapack"]
    assert _themes(_source(lambda a: tg.linalg.eigh(a)[0], spd)) == ["lu", "decompositions", "lapack",
                                                                     "lapack_decompositions"]
    assert _themes(_source(lambda a: tg.linalg.slogdet(a)[1], spd)) == ["lu", "decompositions",
                                                                          "factorizations"]


def test_every_theme_compiles_alone_and_defines_what_it_lists(tmp_path):
    """Each theme, rendered with the core and the themes it needs, compiles, and after the C
    preprocessor (the names come out of macros) defines every name runtime.THEMES lists."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    for theme in runtime.THEMES:
        calls = " ".join(n + ("float(" if n.endswith("_") else "(") for n in theme.provides)
        with_needs = runtime.themes_for([{"code": calls}])
        assert theme.name in with_needs
        text = render_template("runtime.h.j2", [], vector_math=False,
                               runtime_themes=[f"runtime/{t}.h.j2" for t in with_needs])
        assert f"/* ---- runtime theme {theme.name}:" in text
        path = tmp_path / f"{theme.name}.c"
        path.write_text(text)
        r = subprocess.run([cc, "-E", "-P", str(path)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]
        for name in theme.provides:
            assert re.search(rf"\b{name}\w*\s*\(", r.stdout) or name + "[" in r.stdout, (theme.name, name)
        r = subprocess.run([cc, "-fsyntax-only", "-Wall", "-Werror", "-Wno-unused-function", str(path)],
                           capture_output=True, text=True)
        assert r.returncode == 0, (theme.name, r.stderr[-2000:])


def test_rules_are_found_by_the_op_object_not_its_name(monkeypatch):
    tanh = REGISTRY["tanh"]
    assert RULES.rule_for(tanh).kind == "expression"  # (the OpDef's own c template)
    assert RULES.lookup(REGISTRY["matmul"]).kind == "kernel"
    # a renamed op keeps its rule: nothing is looked up by name
    monkeypatch.setattr(E.EXP, "name", "exp_renamed")
    src = _source(lambda x: x.exp().sum(), tg.randn(8))
    assert "tg_expf(" in src


def test_an_op_without_a_rule_is_a_stated_fallback_naming_it():
    op = OpDef("an_op_nobody_lowers", infer=lambda x: (tuple(x.shape), x.dtype), impl=lambda x: x * 3,
               kind="other")
    with pytest.raises(Unsupported, match="an_op_nobody_lowers"):
        RULES.rule_for(op)
    f = tg.compile(lambda x: op(x) + 1, backend="c")
    with pytest.warns(RuntimeWarning, match="an_op_nobody_lowers.*interpreter"):
        out = f(tg.ones(3))
    assert out.tolist() == [4.0, 4.0, 4.0]


def test_registering_an_op_twice_is_an_error():
    with pytest.raises(ValueError, match="twice"):
        RULES.kernel(REGISTRY["matmul"])(lambda lw, n: None)
