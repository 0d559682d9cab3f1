"""``python -m tracegrad.distributed.run -n N script.py [args...]``: start N ranks of a script
(torchrun's role), each running ``init_process_group("mpi")``.

It runs ``mpiexec -n N python -m mpi4py script.py args...`` and returns its exit status.
``python -m mpi4py`` matters: a rank that raises calls MPI_Abort, so every rank ends at once
with the error shown, instead of the others waiting forever in their next collective.
``--mpiexec`` picks the launcher (default: the one beside this Python, as the ``mpich`` wheel
installs it, else ``mpiexec`` on PATH); ``--mpiexec-args`` passes options to it (a cluster's
host file, Open MPI's ``--allow-run-as-root --oversubscribe``).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys


def find_mpiexec() -> str | None:
    """The MPI launcher beside this Python (the mpich wheel's) or on PATH; None if neither."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def command(nprocs: int, target: list[str], mpiexec: str, mpiexec_args: str = "") -> list[str]:
    """The command line that starts ``nprocs`` ranks of ``target`` (a script and its arguments,
    or ``-m module ...``).

    >>> command(2, ["train.py", "--epochs", "3"], "mpiexec")[-5:]
    ['-m', 'mpi4py', 'train.py', '--epochs', '3']
    """
    return [mpiexec, *shlex.split(mpiexec_args), "-n", str(nprocs), sys.executable, "-m", "mpi4py", *target]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tracegrad.distributed.run",
        description="Run a training script on N MPI ranks (each calls "
                    "tracegrad.distributed.init_process_group('mpi')).")
    parser.add_argument("-n", "--nproc-per-node", "--nprocs", dest="nprocs", type=int, default=1,
                        help="number of ranks to start (default 1)")
    parser.add_argument("--mpiexec", default=None, help="the MPI launcher (default: the one beside this Python)")
    parser.add_argument("--mpiexec-args", default="", help="extra options for the launcher, one string")
    parser.add_argument("-m", dest="module", default=None, help="run a module as a script (as python -m)")
    parser.add_argument("script", nargs="?", help="the training script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    ns = parser.parse_args(argv)
    if ns.nprocs < 1:
        parser.error(f"-n must be at least 1, got {ns.nprocs}")
    if (ns.module is None) == (ns.script is None):
        parser.error("give one script to run, or -m module")
    mpiexec = ns.mpiexec or find_mpiexec()
    if mpiexec is None:
        parser.error("no mpiexec found: pip install 'tracegrad[distributed]' (mpi4py and mpich), or pass --mpiexec")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        parser.error("mpi4py is not installed: pip install 'tracegrad[distributed]'")
    target = ["-m", ns.module, *([ns.script] if ns.script else []), *ns.args] if ns.module else [ns.script, *ns.args]
    return subprocess.call(command(ns.nprocs, target, mpiexec, ns.mpiexec_args))


if __name__ == "__main__":
    sys.exit(main())
