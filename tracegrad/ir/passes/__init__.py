"""IR passes. Each pass is one function ``graph -> graph`` (in place) in its own module."""
from .dce import dce


def run_default(graph):
    """The default pipeline applied to every captured graph."""
    dce(graph)
    return graph
