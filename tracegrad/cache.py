"""The on-disk cache of compiled programs: trusted code, so it is protected.

- Where: ``$TRACEGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracegrad``, else ``~/.cache/tracegrad``.
  The directory is created 0700. A directory that is not ours or that group/others can write
  is never loaded from: a warning names it and a fresh private directory is used instead.
- What: one entry per key, ``<key>.so`` (the shared object) and ``<key>.json`` (metadata with
  the SHA-256 of the .so). The key is the SHA-256 of every input of the build (see ``make_key``).
- How: readers verify the checksum (a corrupted or truncated entry is rebuilt); writers hold a
  per-key file lock and publish by temporary file + rename, the .so first and the .json last,
  so concurrent processes build a key once and nobody reads a half-written entry.

>>> import tracegrad.cache as cache
>>> len(cache.make_key({"ir": "graph()", "flags": ["-O3"]}))
64
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
import warnings
from pathlib import Path

ENV = "TRACEGRAD_CACHE_DIR"
LOCK_TIMEOUT_S = 300
_private_fallback = None
_checked = {}


def default_dir():
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tracegrad"


def _is_private(path):
    st = os.stat(path)
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return owner_ok and stat.S_ISDIR(st.st_mode) and not (st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def cache_dir():
    """The directory to read and write entries in (created private; never an unsafe one)."""
    global _private_fallback
    path = default_dir()
    key = str(path)
    if key in _checked:
        return _checked[key]
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        safe = _is_private(path)
    except OSError as e:
        safe, reason = False, f"it cannot be created ({e})"
    else:
        reason = "other users can write to it or it is not owned by you"
    if not safe:
        if _private_fallback is None:
            _private_fallback = Path(tempfile.mkdtemp(prefix="tracegrad-cache-"))
        warnings.warn(f"tracegrad: not using the compile cache directory {path}: {reason}; "
                      f"using the private directory {_private_fallback} for this process instead "
                      f"(set {ENV} to a directory only you can write to).", RuntimeWarning, stacklevel=3)
        _checked[key] = _private_fallback
        return _private_fallback
    _checked[key] = path
    return path


def make_key(parts):
    """SHA-256 (hex) of a JSON-able description of everything a build depends on."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def lookup(key, directory=None):
    """(path of the .so, metadata) for a valid entry, else None (missing or corrupted)."""
    d = Path(directory) if directory is not None else cache_dir()
    meta_path, so_path = d / f"{key}.json", d / f"{key}.so"
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") != key or _sha256_file(so_path) != meta.get("sha256"):
            return None
    except (OSError, ValueError):
        return None
    return so_path, meta


def _publish(src, dst):
    """Atomically place file ``src`` at ``dst`` (same directory: rename is atomic)."""
    os.chmod(src, 0o600 if not str(dst).endswith(".so") else 0o700)
    os.replace(src, dst)


def get_or_build(key, build, on_miss=None):
    """The entry for ``key``, building it once (across processes) with ``build(tmpdir)`` ->
    (path of a built .so inside tmpdir, metadata dict). ``on_miss()`` runs first on a miss,
    outside the lock. Returns (so path, metadata, hit)."""
    d = cache_dir()
    found = lookup(key, d)
    if found is not None:  # published entries are complete (atomic rename): no lock to read one
        return found[0], found[1], True
    from filelock import FileLock  # (only on a miss: importing it is ~20 ms of a warm start)

    if on_miss is not None:
        on_miss()
    with FileLock(str(d / f"{key}.lock"), timeout=LOCK_TIMEOUT_S):
        found = lookup(key, d)  # another process may have built it while we waited
        if found is not None:
            return found[0], found[1], True
        with tempfile.TemporaryDirectory(prefix=f".build-{key[:12]}-", dir=d) as tmp:
            built, meta = build(Path(tmp))
            meta = dict(meta, key=key, sha256=_sha256_file(built), created=time.time())
            tmp_so = Path(tmp) / "publish.so"
            os.replace(built, tmp_so)
            _publish(tmp_so, d / f"{key}.so")
            if "source" in meta:  # readable copy of the generated C next to the binary
                tmp_c = Path(tmp) / "publish.c"
                tmp_c.write_text(meta["source"])
                _publish(tmp_c, d / f"{key}.c")
            tmp_meta = Path(tmp) / "publish.json"
            with open(tmp_meta, "w") as f:
                json.dump(meta, f)
            _publish(tmp_meta, d / f"{key}.json")
    return d / f"{key}.so", meta, False


def entries(directory=None):
    d = Path(directory) if directory is not None else cache_dir()
    return sorted(p for p in d.glob("*.json") if p.with_suffix(".so").exists()) if d.is_dir() else []


def info():
    """A dict: directory, number of entries, total bytes."""
    d = cache_dir()
    total = sum(p.stat().st_size for p in d.iterdir() if p.is_file()) if d.is_dir() else 0
    return {"directory": str(d), "entries": len(entries(d)), "bytes": total}


def clear():
    """Remove every entry (and stale locks); returns the number of entries removed."""
    d = cache_dir()
    n = len(entries(d))
    for p in list(d.iterdir()) if d.is_dir() else []:
        if p.suffix in (".so", ".json", ".lock", ".c") and p.is_file():
            p.unlink(missing_ok=True)
    return n
