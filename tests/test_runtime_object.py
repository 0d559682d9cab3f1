"""The runtime object (backends/c/runtime_object.py): the gemm theme compiled once per
toolchain, kept in the compile cache like a program, and linked into the programs that call
it; programs without BLAS keep it inside, and a damaged object is rebuilt, never linked."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.compiler.backends.c import toolchain
from tracegrad.compiler.backends.c.toolchain import NoCompiler


@pytest.fixture
def cache(tmp_path, monkeypatch):
    try:
        toolchain.toolchain()
    except NoCompiler:
        pytest.skip("no C compiler")
    d = tmp_path / "cache"
    d.mkdir(mode=0o700)
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(d))
    built = []
    original = toolchain.compile_object

    def counted(source, workdir, flag_list, name="runtime"):
        built.append(name)
        return original(source, workdir, flag_list, name)

    monkeypatch.setattr(toolchain, "compile_object", counted)
    return d, built


def _product(options=None, scale=1.0):
    f = tg.compile(lambda a, b: (a @ b * scale).relu().sum(), backend="c", options=options)
    rng = np.random.default_rng(0)
    a, b = (tg.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in ((8, 16), (16, 4)))
    got = float(f(a, b))
    assert got == pytest.approx(float((a @ b * scale).relu().sum()), rel=1e-5)
    return f.programs[0].source


def _object_entries(d):
    """The files of the cache entry holding the runtime object (its source says so)."""
    keys = [c.stem for c in d.glob("*.c") if "the runtime object" in c.read_text().splitlines()[0]]
    return [p for p in d.iterdir() if p.stem in keys]


def test_a_product_links_the_object_built_once(cache):
    d, built = cache
    source = _product()
    assert "TG_GEMM(" not in source and "TG_RT void NAME(" in source  # declared, not defined
    assert built.count("runtime") == 1 and _object_entries(d)
    _product(scale=2.0)  # another program: the object is found, not built again
    assert built.count("runtime") == 1


def test_without_blas_the_theme_stays_inside(cache):
    _, built = cache
    source = _product({"blas": False})
    assert "TG_GEMM(" in source and "runtime" not in built


def test_not_a_program_entry_and_cleared_with_them(cache):
    from tracegrad.compiler import cache as compile_cache

    d, _ = cache
    _product()
    assert len(compile_cache.entries(d)) == 1 and len(list(d.glob("*.so"))) == 1  # the program
    assert compile_cache.clear() == 1
    assert not _object_entries(d)


def test_a_damaged_object_is_rebuilt_not_linked(cache):
    d, built = cache
    _product()
    obj = next(p for p in _object_entries(d) if p.suffix == ".o")
    data = bytearray(obj.read_bytes())
    data[len(data) // 2] ^= 0xFF
    obj.write_bytes(bytes(data))
    _product(scale=3.0)  # (checksum mismatch: built again, then linked)
    assert built.count("runtime") == 2
