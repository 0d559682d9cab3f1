"""tg.testing.assert_close against torch.testing.assert_close: the same verdicts (default
tolerances per dtype, nested containers, dtype and shape checks, equal_nan) and messages'
content; make_tensor's ranges and flags."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

CASES = [
    ([1.0, 2.0], [1.0, 2.0000001], np.float32, {}),
    ([1.0, 2.0], [1.0, 2.1], np.float32, {}),
    ([1.0, 2.0], [1.0, 2.00001], np.float64, {}),
    ([1.0, 2.0], [1.0, 2.00001], np.float64, dict(rtol=1e-4, atol=0.0)),
    ([1.0, np.nan], [1.0, np.nan], np.float64, {}),
    ([1.0, np.nan], [1.0, np.nan], np.float64, dict(equal_nan=True)),
    ([np.inf, -1.0], [np.inf, -1.0], np.float32, {}),
    ([1, 2], [1, 3], np.int64, {}),
]


@pytest.mark.parametrize("actual, expected, dtype, kwargs", CASES, ids=str)
def test_verdicts_equal_torchs(actual, expected, dtype, kwargs):
    verdicts = []
    for lib in (tg, torch):
        try:
            lib.testing.assert_close(lib.tensor(np.array(actual, dtype)), lib.tensor(np.array(expected, dtype)),
                                     **kwargs)
            verdicts.append(None)
        except AssertionError as e:
            verdicts.append(str(e).splitlines()[0])
    assert verdicts[0] == verdicts[1]


def test_structure_dtype_and_shape_checks_name_what_differs():
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        tg.testing.assert_close(tg.ones(2), tg.ones(2, dtype=tg.float64))
    tg.testing.assert_close(tg.ones(2), tg.ones(2, dtype=tg.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        tg.testing.assert_close(tg.ones(2), tg.ones(3))
    with pytest.raises(AssertionError, match=r"Greatest absolute difference: .* at index \(1,\)"):
        tg.testing.assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.5]))
    with pytest.raises(AssertionError, match=r"item \['b'\]\[1\]"):
        tg.testing.assert_close({"a": tg.ones(1), "b": [tg.ones(1), tg.ones(1)]},
                                {"a": tg.ones(1), "b": [tg.ones(1), tg.zeros(1)]})
    with pytest.raises(AssertionError, match="custom"):
        tg.testing.assert_close(tg.ones(1), tg.zeros(1), msg="custom")
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        tg.testing.assert_close(tg.ones(1), tg.ones(1), rtol=1e-3)
    tg.testing.assert_close(1.0, 1.0 + 1e-9)


def test_make_tensor_ranges_and_flags():
    tg.manual_seed(0)
    f = tg.testing.make_tensor(100, dtype=tg.float32, device="cpu", low=-1, high=1, requires_grad=True)
    assert f.requires_grad and f.dtype == tg.float32 and -1 <= float(f.min()) and float(f.max()) < 1
    i = tg.testing.make_tensor((50,), dtype=tg.int64, device="cpu", low=0, high=3, exclude_zero=True)
    assert set(i.tolist()) <= {1, 2}
    b = tg.testing.make_tensor(10, dtype=tg.bool, device="cpu")
    assert b.dtype == tg.bool
