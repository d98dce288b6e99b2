"""LangGraph state machines: each agent's graph (``graphs/<agent>.py``, ``graphs/<agent>_*.py``) and, in
:mod:`evigraph.graphs.kit`, the parts they are built from."""
