"""Veri-R1: online claim verification with a search tool (specs/veri-r1.md).

Pieces: :mod:`.prompts` (online/offline prompts, environment notes), :mod:`.actions` (turn routing),
:mod:`.parsing` (the answer grammar), :mod:`.format_rules` (F1–F8), :mod:`.rewards` (pure reward functions),
:mod:`.metrics` (evaluation), :mod:`.scoring` (the rewards behind the framework's signature), :mod:`.verdict`
(what a run concluded), :mod:`.evaluation` (the eval adapter), :mod:`.gold` and :mod:`.data` (input files),
:mod:`.hooks` (``verify`` and ``filter``), :mod:`.stepgap_trace` (a run read as StepGap's trace, for mixed
training rewards). The graph lives in :mod:`evigraph.graphs.veri_r1`. This module only
declares the agent, so importing it is cheap.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_PACKAGE = "evigraph.agents.veri_r1"

SPEC = AgentSpec(
    name="veri-r1",
    description="Online claim verification: plan, up to 3 BM25 searches, then a label and evidence ids.",
    tool_name="verify_claim",
    verb="verify",
    config=f"{_PACKAGE}.schemas:VeriR1Config",
    graph_builder="evigraph.graphs.veri_r1:build_veri_r1_graph",
    input_schema=f"{_PACKAGE}.schemas:VeriR1Inputs",
    output_schema=f"{_PACKAGE}.schemas:VeriR1Result",
    rewards={
        "final": f"{_PACKAGE}.scoring:FINAL_REWARD",
        "compat-training": f"{_PACKAGE}.scoring:COMPAT_TRAINING_REWARD",
    },
    evaluation=f"{_PACKAGE}.evaluation:EVALUATION",
    resources=("search",),
    hooks={"run": f"{_PACKAGE}.hooks:run_command", "filter": f"{_PACKAGE}.hooks:filter_command"},
    command_help={"filter": "Keep the training records a teacher model gets exactly right (label and evidence)."},
    step_readers={"stepgap": f"{_PACKAGE}.stepgap_trace:veri_r1_trace"},
    verification=f"{_PACKAGE}.verification:to_verification",
    conversation_inputs=f"{_PACKAGE}.conversation:inputs_from",
    report_view=f"{_PACKAGE}.report_view:report_view",
)
