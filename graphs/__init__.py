"""LangGraph state machines built from the parts in ``evigraph.agents`` and ``evigraph.tools``,
plus composition helpers (as a subgraph, as a LangChain tool, as a guard)."""
