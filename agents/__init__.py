"""What each verification method *is*: prompts, protocol parser, output schema, rewards and metrics.

One subpackage per method (``agents/<method>/``). Each registers itself with
:mod:`evigraph.registry` through the ``evigraph.agents`` entry-point group, the same route third-party
agents use.
"""
