"""Anomaly detection hooks used by the engine (filled in by the anomaly-mode work)."""


def record_forward_trace(node):
    pass


def report_backward_failure(node, exc):
    pass


def check_nan(node, grads):
    pass
