"""The parts of ``torch.linalg`` whose results are complex: ``eig`` and ``eigvals`` (a real
non-symmetric matrix has complex eigenvalues and eigenvectors in general). tracegrad has no
complex dtypes, so these raise NotImplementedError saying so, rather than being absent (an
AttributeError) or returning something else. Symmetric matrices: ``eigh``/``eigvalsh``.

>>> import tracegrad as tg
>>> tg.linalg.eig(tg.eye(2))
Traceback (most recent call last):
    ...
NotImplementedError: tg.linalg.eig: its results are complex (torch.complex64/complex128) and tracegrad has no complex dtypes; for symmetric matrices use tg.linalg.eigh (real eigenvalues and eigenvectors)
"""
from __future__ import annotations

__all__ = ["eig", "eigvals"]


def _complex_results(name, alternative):
    raise NotImplementedError(f"tg.linalg.{name}: its results are complex (torch.complex64/complex128) and "
                              f"tracegrad has no complex dtypes; for symmetric matrices use "
                              f"tg.linalg.{alternative}")


def eig(A):
    """Not implemented: PyTorch's ``eig`` returns complex eigenvalues and eigenvectors (see the
    module's docstring); ``eigh`` serves symmetric matrices."""
    _complex_results("eig", "eigh (real eigenvalues and eigenvectors)")


def eigvals(A):
    """Not implemented: PyTorch's ``eigvals`` returns complex eigenvalues (see the module's
    docstring); ``eigvalsh`` serves symmetric matrices."""
    _complex_results("eigvals", "eigvalsh (real eigenvalues)")
