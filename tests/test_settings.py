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
