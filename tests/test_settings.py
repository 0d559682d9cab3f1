"""tg.set_printoptions (reprs equal PyTorch's under each option) and the deterministic switch."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

VALUES = [np.array([[1.23456789, 1234.5], [0.00012, -3.5]], np.float32), np.arange(10, dtype=np.float32) * 1.5,
          np.array([1e10, 1.0], np.float32), np.arange(2000, dtype=np.float32)]


@pytest.mark.parametrize("options", [dict(precision=2), dict(sci_mode=True), dict(sci_mode=False),
                                     dict(profile="short"), dict(profile="full"), dict(linewidth=20),
                                     dict(threshold=3, edgeitems=1)], ids=str)
def test_reprs_equal_pytorchs_under_print_options(options):
    try:
        tg.set_printoptions(**options)
        torch.set_printoptions(**options)
        for v in VALUES:
            assert repr(tg.tensor(v)) == repr(torch.tensor(v))
    finally:
        tg.set_printoptions(profile="default", sci_mode=None)
        torch.set_printoptions(profile="default", sci_mode=None)
    assert repr(tg.tensor(VALUES[0])) == repr(torch.tensor(VALUES[0]))


def test_bad_profile_is_named():
    with pytest.raises(ValueError, match="profile must be one of"):
        tg.set_printoptions(profile="long")


def test_deterministic_switch_reads_back():
    try:
        tg.use_deterministic_algorithms(True, warn_only=True)
        assert tg.are_deterministic_algorithms_enabled() and tg.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tg.use_deterministic_algorithms(False)
    assert not tg.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError, match="expects a bool"):
        tg.use_deterministic_algorithms("yes")


def test_set_num_threads_reaches_the_blas_libraries_and_programs_still_run():
    from tracegrad.compiler.backends.c import threads, toolchain

    if toolchain.blas() is None:
        pytest.skip("no BLAS library")
    before = tg.get_num_threads()
    f = tg.compile(lambda a, b: (a @ b).sum())
    x = tg.randn(300, 300)
    want = float((x @ x).sum())
    try:
        tg.set_num_threads(1)
        assert tg.get_num_threads() == 1
        counts = []
        for path, prefix, ilp64, _ in toolchain._blas_candidates():
            for lib in threads._loaded([path]):
                getter = f"{prefix}openblas_get_num_threads{'64_' if ilp64 else ''}"
                if hasattr(lib, getter):
                    counts.append(getattr(lib, getter)())
        assert counts and set(counts) == {1}
        assert float(f(x, x)) == pytest.approx(want, rel=1e-4)
    finally:
        tg.set_num_threads(before)
    with pytest.raises(RuntimeError, match="positive integer"):
        tg.set_num_threads(0)


def test_a_count_set_before_the_openmp_runtime_loads_reaches_it(tmp_path):
    import subprocess
    import sys

    code = """
import tracegrad as tg
from tracegrad.compiler.backends.c import threads
tg.set_num_threads(1)
f = tg.compile(lambda a: (a.exp() * 2).sum(), options={"openmp": True})
f(tg.randn(1000))
runtimes = list(threads._loaded(threads._openmp_names()))
print(runtimes[0].omp_get_max_threads() if runtimes else "none")
"""
    env = {**__import__("os").environ, "TRACEGRAD_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() == "none":
        pytest.skip("no OpenMP runtime on this machine")
    assert out.stdout.strip() == "1"
