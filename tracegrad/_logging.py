"""Log topics: what the compiler says about its work, through the ``tracegrad`` logger only.

Topics are switched on by ``TRACEGRAD_LOG`` (a comma list, read again whenever the variable
changes, also at run time) or by :func:`set_logs`:

=========  ==========================================================
``ir``      each captured program's listing
``code``    the backend's generated source
``cache``   hits, misses and new programs
``guards``  why a retrace happened (which guard failed, and how)
``breaks``  graph breaks
``devices`` eager ops on cuda tensors that run on the host, once per op
=========  ==========================================================

Records go to ``logging.getLogger("tracegrad")`` at INFO, their message starting with
``"<topic>] "``. Nothing here touches the root logger: records propagate to it as any library's
do, so an application that configured logging sees them through its own handlers. Only where no
handler at all would print them (nothing configured, the usual case in a script) does this
module attach one handler of its own, to the ``tracegrad`` logger, writing ``[tracegrad
<topic>] ...`` to stderr; it is removed again as soon as another handler appears on the way up,
so no line is printed twice.

>>> import tracegrad._logging as tg_logging
>>> tg_logging.set_logs(guards=True)   # as TRACEGRAD_LOG=guards
>>> tg_logging.enabled("guards"), tg_logging.enabled("ir")
(True, False)
>>> tg_logging.set_logs()              # back to TRACEGRAD_LOG alone
"""
from __future__ import annotations

import logging
import os
import sys
import warnings

__all__ = ["TOPICS", "ENV_VAR", "logger", "enabled", "log", "set_logs", "switch"]

ENV_VAR = "TRACEGRAD_LOG"
TOPICS: dict[str, str] = {
    "ir": "each captured program's listing",
    "code": "the backend's generated source",
    "cache": "hits, misses and new programs",
    "guards": "why a retrace happened",
    "breaks": "graph breaks",
    "devices": "eager ops on cuda tensors that run on the host (no CUDA rule), once per op",
}
logger = logging.getLogger("tracegrad")


class _Switch:
    """The topic state, kept so that the compiled call's fast path pays one attribute read.

    ``on`` is False only while no topic is enabled and the state is known current; the fast
    path reads it and, when it is True, calls :meth:`refresh` (which says whether any topic is
    enabled). ``TRACEGRAD_LOG`` is re-read only after an audit event says the environment
    changed (``os.putenv``/``os.unsetenv``: what ``os.environ[...] = v`` and ``del`` raise), so
    a steady state costs nothing; without an audit hook the variable is read at every check."""

    __slots__ = ("on", "topics", "_stale", "_poll", "_env", "_overrides")

    def __init__(self) -> None:
        self.on = True  # stale until the first refresh
        self.topics: frozenset[str] = frozenset()
        self._stale = True
        self._poll = False  # True where no audit hook could be installed
        self._env: str | None = None
        self._overrides: dict[str, bool] = {}

    def invalidate(self) -> None:
        self._stale = True
        self.on = True

    def refresh(self) -> bool:
        """Re-read ``TRACEGRAD_LOG`` if it may have changed; True when any topic is enabled."""
        if self._stale or self._poll:
            self._stale = False  # (before the read: a change during it marks stale again)
            raw = os.environ.get(ENV_VAR)
            if raw != self._env:
                self._env = raw
                self._recompute()
            self.on = self._poll or bool(self.topics)
        return bool(self.topics)

    def _recompute(self) -> None:
        names = {t.strip() for t in (self._env or "").split(",")} - {""}
        for name in sorted(names - TOPICS.keys()):
            _warn_unknown(name)
        names |= {t for t, v in self._overrides.items() if v}
        names -= {t for t, v in self._overrides.items() if not v}
        self.topics = frozenset(names & TOPICS.keys())


switch = _Switch()
_warned: set[str] = set()


def _warn_unknown(name: str) -> None:
    if name not in _warned:  # once per name and process, however often the variable is re-read
        _warned.add(name)
        warnings.warn(f"{ENV_VAR}: unknown topic {name!r} ignored; the topics are "
                      f"{', '.join(TOPICS)}", UserWarning, stacklevel=4)


def _audit(event: str, args: tuple) -> None:
    # called for every audited event in the process: keep the common case to two compares
    if event == "os.putenv" or event == "os.unsetenv":
        key = args[0]
        if key == ENV_VAR or key == b"TRACEGRAD_LOG":
            switch.invalidate()


try:
    sys.addaudithook(_audit)
except Exception:  # a hook that refuses new hooks (sandboxes): poll the variable instead
    switch._poll = True


def enabled(topic: str) -> bool:
    """Whether ``topic`` is switched on now (by ``TRACEGRAD_LOG`` or :func:`set_logs`).

    >>> enabled("no-such-topic")
    False
    """
    if switch._stale or switch._poll:
        switch.refresh()
    return topic in switch.topics


def set_logs(**topics: bool) -> None:
    """Switch topics on (``True``) or off (``False``) over what ``TRACEGRAD_LOG`` says, as
    ``torch._logging.set_logs`` does for ``TORCH_LOGS``; ``set_logs()`` drops every override.

    >>> set_logs(cache=True, guards=False)
    >>> enabled("cache")
    True
    >>> set_logs()
    >>> set_logs(graph=True)
    Traceback (most recent call last):
    ...
    ValueError: set_logs: unknown topic 'graph'; the topics are ir, code, cache, guards, breaks, devices
    """
    for name, value in topics.items():
        if name not in TOPICS:
            raise ValueError(f"set_logs: unknown topic {name!r}; the topics are {', '.join(TOPICS)}")
        if not isinstance(value, bool):
            raise TypeError(f"set_logs: {name}= takes True or False, not {value!r}")
    switch._overrides = dict(topics)
    switch._recompute()
    switch.invalidate()  # (the next check also re-reads the variable: cheap, and always current)


class _StderrHandler(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is at each record (as ``logging.lastResort`` does), so a
    redirected stderr receives the lines."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)  # (no stream bound: the property below is the stream)
        self.setFormatter(logging.Formatter("[tracegrad %(message)s"))

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr


_handler = _StderrHandler()


def _others_print() -> bool:
    """Whether a handler other than ours sits on the ``tracegrad`` logger or above it."""
    node: logging.Logger | None = logger
    while node is not None:
        if any(h is not _handler for h in node.handlers):
            return True
        if not node.propagate:
            return False
        node = node.parent
    return False


def log(topic: str, msg: str, *args: object) -> None:
    """Log ``msg % args`` under ``topic`` if it is enabled (``"<topic>] <message>"``, INFO).

    >>> log("cache", "not printed: %s", "the topic is off")
    """
    if not enabled(topic):
        return
    if logger.level == logging.NOTSET:
        # the topic is the user's request to see these lines; a level set explicitly is kept
        logger.setLevel(logging.INFO)
    if _others_print():
        if _handler in logger.handlers:
            logger.removeHandler(_handler)
    elif _handler not in logger.handlers:
        logger.addHandler(_handler)
    logger.info(f"{topic}] " + msg, *args, stacklevel=2)
