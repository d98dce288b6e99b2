"""Veri-R1: online claim verification with a search tool (specs/veri-r1.md).

Pieces: :mod:`.prompts` (online/offline prompts, environment notes), :mod:`.actions` (turn routing),
:mod:`.answer` (answer grammar), :mod:`.format_rules` (F1–F8), :mod:`.rewards` (pure reward functions),
:mod:`.metrics` (evaluation), :mod:`.gold` and :mod:`.data` (input files), :mod:`.hooks` (CLI). The graphs
live in :mod:`evigraph.graphs.veri_r1`. This module only declares the agent, so importing it is cheap.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_HOOKS = "evigraph.agents.veri_r1.hooks"

SPEC = AgentSpec(
    name="veri-r1",
    description="Online claim verification: plan, up to 3 BM25 searches, then a label and evidence ids.",
    verb="verify",
    graph_builder="evigraph.graphs.veri_r1:build_veri_r1_graph",
    input_schema="evigraph.agents.veri_r1.schemas:VeriR1Input",
    output_schema="evigraph.agents.veri_r1.schemas:VeriR1Output",
    rewards={
        "final": "evigraph.agents.veri_r1.rewards:final_reward",
        "compat_training": "evigraph.agents.veri_r1.rewards:compat_training_reward",
    },
    metrics="evigraph.agents.veri_r1.metrics:aggregate",
    hooks={name: f"{_HOOKS}:{name}_command" for name in ("run", "eval", "score", "reward", "filter")},
)
