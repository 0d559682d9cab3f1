"""IR passes. Each pass is one function ``graph -> graph`` (in place) in its own module:

- ``simplify``: algebraic identities and broadcast absorption (simplify.py);
- ``fold``: constant folding with the ops' NumPy implementations (fold.py);
- ``cse``: common-subexpression elimination (cse.py);
- ``dce``: dead-code elimination (dce.py);
- ``bucket_collectives``: independent all-reduces merged into a few flat buffers
  (bucket_collectives.py), once, after the others;
- ``mincut.choose_saved``: the forward/backward partition (mincut.py, cost_model.py).

``optimize`` runs the first four until nothing changes; with ``verify=True`` (or the
environment variable ``TRACEGRAD_VERIFY=1``, which the test-suite sets) the verifier runs after
every pass and names the pass that broke the graph.
"""
import os

from ..ir.graph import IRError
from .bucket_collectives import bucket_collectives
from .cse import cse
from .dce import dce
from .fold import fold
from .simplify import simplify

PIPELINE = (simplify, fold, cse, dce)
MAX_ROUNDS = 8


def verify_enabled():
    return os.environ.get("TRACEGRAD_VERIFY", "") not in ("", "0")


def run_pass(p, graph, verify=None):
    """Run one pass; verify the result when asked (the error names the pass)."""
    p(graph)
    if verify if verify is not None else verify_enabled():
        try:
            graph.verify()
        except IRError as exc:
            raise IRError(f"after pass {p.__name__}: {exc}") from exc
    return graph


def optimize(graph, verify=None):
    """Run the pipeline to a fixed point (at most MAX_ROUNDS rounds)."""
    before = graph.signature()
    for _ in range(MAX_ROUNDS):
        for p in PIPELINE:
            run_pass(p, graph, verify)
        after = graph.signature()  # (also the next round's "before": nothing runs in between)
        if after == before:
            break
        before = after
    run_pass(bucket_collectives, graph, verify)
    return graph


def run_default(graph, verify=None):
    """The default pipeline applied to every captured graph."""
    return optimize(graph, verify)
