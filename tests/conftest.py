"""Shared test setup: the whole session builds into a private, fresh C cache directory, so that
tests never read or fill the user's cache (tests of the cache itself set their own)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path_factory.mktemp("tgcache")))
    yield
    mp.undo()
