"""The examples in the package's docstrings run and print what they show (doctest), so the
documentation at the public edge cannot drift from the code."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tracegrad

MODULES = sorted(m.name for m in pkgutil.walk_packages(tracegrad.__path__, "tracegrad.")
                 if not m.name.endswith(("__main__", "_cffi_abi")))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))  # examples that compile build here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (run python -m doctest -v on it)"


def test_the_public_modules_have_examples():
    counts = {name: len([t for t in doctest.DocTestFinder().find(importlib.import_module(name)) if t.examples])
              for name in ("tracegrad", "tracegrad.nn", "tracegrad.nn.functional", "tracegrad.compiler",
                           "tracegrad._api.composites", "tracegrad.nn.modules.padding")}
    assert all(counts.values()), counts
