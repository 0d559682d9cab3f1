"""The on-disk cache of compiled programs: trusted code, so it is protected (docs/security.md).

- Where: ``$TRACEGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracegrad``, else ``~/.cache/tracegrad``.
  The directory is created 0700. It is checked every time an entry is looked up, not once per
  process: a directory that is a symbolic link, is not ours, or that group/others can write is
  never loaded from (a warning names it and a fresh private directory is used instead). A
  directory we cannot write (read-only, full) keeps serving the entries it has; new ones are
  built in the private directory, after one warning.
- What: one entry per key, ``<key>.so`` (the shared object), ``<key>.json`` (metadata: the
  SHA-256 of the .so and the sizes of the buffers the caller allocates) and ``<key>.c`` (a
  readable copy of the source). The C backend's runtime object (backends/c/runtime_object.py)
  is an entry of its own kind, ``<key>.o`` in place of the .so, checked the same way and not
  counted among the programs (``entries``). The key is the SHA-256 of every input of the build (see
  ``make_key``); the metadata carries a checksum of itself (``read_json``), so editing either
  file makes the entry invalid: it is rebuilt, never loaded.
- How: readers open entry files without following links and check their owner and mode;
  writers hold a per-key file lock and publish by temporary file + rename, the .so first and the
  .json last, so that concurrent threads and processes build a key once and nobody reads a
  half-written entry. Build directories (``.build-<key>-<host>-<pid>-*``) of processes that died
  are removed.

>>> import tracegrad.compiler.cache as cache
>>> len(cache.make_key({"ir": "graph()", "flags": ["-O3"]}))
64
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
import warnings
from pathlib import Path

ENV = "TRACEGRAD_CACHE_DIR"
LOCK_TIMEOUT_S = 300
LEGACY_BUILD_MAX_AGE_S = 24 * 3600  # build directories of an older release (no pid in the name)

_KEY_RE = re.compile(r"[0-9a-f]{64}")
_MEMO_RE = re.compile(r"toolchain-[0-9a-f]{16}\.json")
# .build-<tag>-<host>-<pid>-<random>: the host (hashed) and pid of the process that owns it
_BUILD_RE = re.compile(r"\.build-([0-9a-z]{1,12})-([0-9a-f]{8})-([0-9]+)-[A-Za-z0-9_]+")
_LEGACY_BUILD_RE = re.compile(r"\.build-[0-9a-f]{12}-[A-Za-z0-9_]{8}")
_CHECKSUM = "checksum"

_state_lock = threading.Lock()
_private_fallback = None
_warned = set()  # (directory, reason) already warned about
_unwritable = {}  # directory -> the private directory its new entries are built in
_swept = set()  # directories whose stale build directories this process has removed


class Untrusted(OSError):
    """A file or directory of the cache that must not be loaded from (why: the message)."""


# ----------------------------------------------------------------------------- trust
def default_dir():
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tracegrad"


def _mode_problem(st, what):
    """Why a file or directory with stat ``st`` is not trusted, or None."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{what} is owned by another user (uid {st.st_uid}, you are {os.getuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"other users can write to {what} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def untrusted_reason(path):
    """Why directory ``path`` must not be loaded from (a symbolic link, not a directory, owned by
    another user, writable by group or others), or None when it is private."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link (point the cache at the directory itself)"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    return _mode_problem(st, "it")


def _private_dir():
    """This process's private directory (mkdtemp: 0700, ours), created on first use."""
    global _private_fallback
    with _state_lock:
        if _private_fallback is None or not os.path.isdir(_private_fallback) \
                or untrusted_reason(_private_fallback) is not None:
            _private_fallback = Path(tempfile.mkdtemp(prefix="tracegrad-cache-"))
        return _private_fallback


def _warn_once(path, reason, instead, stacklevel=4):
    with _state_lock:
        if (str(path), reason) in _warned:
            return
        _warned.add((str(path), reason))
    warnings.warn(f"tracegrad: not using the compile cache directory {path}: {reason}; "
                  f"using the private directory {instead} for this process instead "
                  f"(set {ENV} to a directory only you can write to).", RuntimeWarning, stacklevel=stacklevel)


def cache_dir():
    """The directory to read entries from, checked now (created private when missing; never a
    link, another user's or a group/world-writable one: those give the private directory)."""
    path = default_dir()
    try:
        if not os.path.lexists(path):
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        reason = untrusted_reason(path)
    except OSError as e:
        reason = f"it cannot be created ({e.strerror or e})"
    if reason is None:
        return path
    instead = _private_dir()
    _warn_once(path, reason, instead)
    return instead


def make_key(parts):
    """SHA-256 (hex) of a JSON-able description of everything a build depends on."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


# ----------------------------------------------------------------------------- files
def _open_trusted(path):
    """A read-only file descriptor of regular file ``path``, opened without following a symbolic
    link and checked on the open file (ours, not group/world-writable); raises Untrusted."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        problem = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else _mode_problem(st, "it")
        if problem:
            raise Untrusted(f"{path}: {problem}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _sha256_fd(fd):
    h = hashlib.sha256()
    with os.fdopen(os.dup(fd), "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _sha256_file(path, trusted=True):
    """SHA-256 of a file; ``trusted``: of a cache file, checked by ``_open_trusted`` (a file just
    built in our private build directory is not: its mode follows the umask until published)."""
    fd = _open_trusted(path) if trusted else os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        return _sha256_fd(fd)
    finally:
        os.close(fd)


def _checksum(obj):
    """SHA-256 of a JSON object without its checksum field (canonical form: sorted keys)."""
    body = {k: v for k, v in obj.items() if k != _CHECKSUM}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def read_json(path):
    """The JSON object in trusted file ``path`` whose checksum (written by ``write_json``)
    matches; raises OSError (Untrusted included) or ValueError otherwise."""
    fd = _open_trusted(path)
    with os.fdopen(fd, "r") as f:
        obj = json.load(f)
    if not isinstance(obj, dict) or obj.get(_CHECKSUM) != _checksum(obj):
        raise ValueError(f"{path}: checksum mismatch (edited or damaged)")
    return obj


def _host_tag():
    """8 hex digits naming this machine (a pid means something on its own host only)."""
    import socket  # (here: only builds and sweeps need it, never a warm start)

    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _temp_prefix(tag):
    """``.build-<tag>-<host>-<pid>-``: lets a later process tell a dead owner's leftovers."""
    return f".build-{tag}-{_host_tag()}-{os.getpid()}-"


def write_json(directory, name, obj):
    """Atomically write ``obj`` (a dict, given a checksum field) as ``directory/name`` (0600)."""
    obj = dict(obj)
    obj[_CHECKSUM] = _checksum(obj)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix("json"), dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f)
        _publish(tmp, Path(directory) / name)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _publish(src, dst):
    """Atomically place file ``src`` at ``dst`` (same directory: rename is atomic)."""
    os.chmod(src, 0o600 if not str(dst).endswith(".so") else 0o700)
    os.replace(src, dst)


def lookup(key, directory=None, suffix=".so"):
    """(path of the .so, or of the ``suffix`` file, metadata) for a valid entry, else None
    (missing, damaged, edited, or not trusted: a link, another user's, group/world-writable, in
    an untrusted directory)."""
    d = Path(directory) if directory is not None else cache_dir()
    meta_path, so_path = d / f"{key}.json", d / f"{key}{suffix}"
    try:
        if untrusted_reason(d) is not None:
            return None
        meta = read_json(meta_path)
        if meta.get("key") != key or _sha256_file(so_path) != meta.get("sha256"):
            return None
        if "source_sha256" in meta:  # (checked like the binary: it is shown and exported)
            fd = _open_trusted(d / f"{key}.c")
            with os.fdopen(fd, "rb") as f:
                data = f.read()  # (hashed as read: what is checked is what is shown)
            if hashlib.sha256(data).hexdigest() != meta["source_sha256"]:
                return None
            meta["source"] = data.decode()
    except (OSError, ValueError):
        return None
    return so_path, meta


# ----------------------------------------------------------------------------- building
class _DirectoryUnusable(Exception):
    """Writing into the cache directory failed (read-only, full, ...): ``error`` says how."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def get_or_build(key, build, on_miss=None, suffix=".so"):
    """The entry for ``key``, building it once (across threads and processes) with
    ``build(tmpdir)`` -> (path of a built .so inside tmpdir, metadata dict). ``on_miss()`` runs
    first on a miss, outside the lock. Returns (so path, metadata, hit). ``suffix``: the built
    file's, for an entry that is not a program (".o": the runtime object).

    A cache directory that cannot be written (read-only, full) is warned about once; the entry
    is then built in this process's private directory."""
    d = cache_dir()
    found = lookup(key, d, suffix)
    if found is not None:  # published entries are complete (atomic rename): no lock to read one
        return found[0], found[1], True
    alt = _unwritable.get(str(d))
    if alt is not None:
        found = lookup(key, alt, suffix)
        if found is not None:
            return found[0], found[1], True
    if on_miss is not None:
        on_miss()
    if alt is None:
        _sweep_once(d)
        try:
            return _build_locked(d, key, build, suffix)
        except _DirectoryUnusable as e:
            alt = _private_dir()
            _unwritable[str(d)] = alt
            _warn_once(d, f"it cannot be written ({e.error.strerror or e.error})", alt)
    try:
        return _build_locked(alt, key, build, suffix)
    except _DirectoryUnusable as e:
        raise e.error from None  # the private directory too (a full /tmp): nothing else to try


def _build_locked(d, key, build, suffix=".so"):
    from filelock import FileLock, Timeout  # (only on a miss: importing it is ~20 ms of a warm start)

    lock = FileLock(str(d / f"{key}.lock"), timeout=LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except Timeout:  # (a TimeoutError, so an OSError: the directory is fine, someone holds it)
        raise
    except OSError as e:
        raise _DirectoryUnusable(e) from None
    try:
        found = lookup(key, d, suffix)  # another thread or process may have built it while we waited
        if found is not None:
            return found[0], found[1], True
        try:
            tmp = Path(tempfile.mkdtemp(prefix=_temp_prefix(key[:12]), dir=d))
        except OSError as e:
            raise _DirectoryUnusable(e) from None
        try:
            built, meta = build(tmp)  # (its own errors are the caller's: compiler failures)
            meta = dict(meta, key=key, sha256=_sha256_file(built, trusted=False), created=time.time())
            try:
                _publish_entry(d, key, tmp, built, meta, suffix)
            except OSError as e:
                raise _DirectoryUnusable(e) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        lock.release()
    return d / f"{key}{suffix}", meta, False


def _publish_entry(d, key, tmp, built, meta, suffix):
    tmp_so = tmp / f"publish{suffix}"
    os.replace(built, tmp_so)
    _publish(tmp_so, d / f"{key}{suffix}")
    if "source" in meta:  # the generated C, once: next to the binary (lookup reads it back)
        tmp_c = tmp / "publish.c"
        _write_text(tmp_c, meta["source"])
        meta = {k: v for k, v in meta.items() if k != "source"}
        meta["source_sha256"] = _sha256_file(tmp_c, trusted=False)
        _publish(tmp_c, d / f"{key}.c")
    write_json(d, f"{key}.json", meta)  # last: its presence makes the entry visible


def _write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


# ----------------------------------------------------------------------------- housekeeping
def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process (or a bogus number)
        return True
    return True


def _stale(p, now):
    """Is ``p`` a build directory (or temporary file) this machine's dead process left behind?"""
    m = _BUILD_RE.fullmatch(p.name)
    if m:
        return m.group(2) == _host_tag() and not _pid_alive(int(m.group(3)))
    if _LEGACY_BUILD_RE.fullmatch(p.name):  # no owner recorded: by age
        return now - p.lstat().st_mtime > LEGACY_BUILD_MAX_AGE_S
    return False


def remove_stale_builds(directory=None):
    """Remove the build directories and temporary files of dead processes; returns how many."""
    d = Path(directory) if directory is not None else cache_dir()
    n, now = 0, time.time()
    for p in list(d.glob(".build-*")) if d.is_dir() else []:
        try:
            if not _stale(p, now):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
            n += 1
        except OSError:
            continue
    return n


def _sweep_once(d):
    with _state_lock:
        if str(d) in _swept:
            return
        _swept.add(str(d))
    remove_stale_builds(d)


def _is_entry(meta_path):
    """Is ``meta_path`` the metadata of one of our entries (its name is the key it records)?"""
    if not _KEY_RE.fullmatch(meta_path.stem):
        return False
    try:
        return read_json(meta_path).get("key") == meta_path.stem
    except (OSError, ValueError):
        return False


def entries(directory=None):
    """The metadata paths of the cache's entries (its programs: runtime objects are not counted)."""
    return _entries(Path(directory) if directory is not None else cache_dir(), ".so")


def _entries(d, built):
    """The metadata paths of the entries in ``d`` whose built file is ``<key><built>``."""
    return sorted(p for p in d.glob("*.json") if _is_entry(p) and p.with_suffix(built).exists()) \
        if d.is_dir() else []


def info():
    """A dict: directory, number of entries (programs), total bytes of the entries and of the
    runtime objects beside them (what ``clear`` would free)."""
    d = cache_dir()
    total = 0
    for built in (".so", ".o"):
        for meta in _entries(d, built):
            for suffix in (built, ".json", ".c"):
                p = meta.with_suffix(suffix)
                total += p.stat().st_size if p.is_file() else 0
    return {"directory": str(d), "entries": len(entries(d)), "bytes": total}


def clear():
    """Remove the cache's entries (files named and recorded by a key), the compiler memos, the
    unused lock files and the build directories of dead processes; anything else in the
    directory is left alone. Returns the number of entries removed."""
    d = cache_dir()
    if not d.is_dir():
        return 0
    n = 0
    for built in (".so", ".o"):  # programs, then runtime objects (backends/c/runtime_object.py): not counted
        for meta in _entries(d, built):
            for suffix in (built, ".c", ".json"):
                meta.with_suffix(suffix).unlink(missing_ok=True)
            n += 1 if built == ".so" else 0
    for memo in d.glob("toolchain-*.json"):
        if _MEMO_RE.fullmatch(memo.name):
            try:
                if "ident" in read_json(memo):
                    memo.unlink()
            except (OSError, ValueError):
                pass
    from filelock import FileLock, Timeout

    for lock_path in d.glob("*.lock"):
        if not (_KEY_RE.fullmatch(lock_path.stem) and lock_path.is_file() and not lock_path.is_symlink()
                and lock_path.stat().st_size == 0):
            continue
        try:  # only a lock nobody holds (a build in progress keeps its own)
            with FileLock(str(lock_path), timeout=0):
                lock_path.unlink(missing_ok=True)
        except (Timeout, OSError):
            continue
    remove_stale_builds(d)
    return n
