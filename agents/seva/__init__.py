"""SEVA: structured attribution verification with a five-component process reward (specs/seva.md).

Pieces: :mod:`.schemas` (taxonomy, config, the verdict), :mod:`.labels` (aliases), :mod:`.prompts`,
:mod:`.parsing` (§2.2), :mod:`.verdict` (a reply to an output, source spans located), :mod:`.rewards` (pure §3
components and variants), :mod:`.scoring` (the reward objects), :mod:`.metrics` (§4), :mod:`.data` (ours,
WiCE, Veri-R1), :mod:`.evaluation` (the adapter), :mod:`.perturb` (the six probe strategies and filters),
:mod:`.teacher_job` (annotation), :mod:`.evolve` (Verify → Reflect → Probe → Refine), :mod:`.hooks`
(``evigraph attribute``, ``evigraph annotate seva``, ``evigraph evolve seva``). The graph is
:mod:`evigraph.graphs.seva`. This module only declares the agent.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_PACKAGE = "evigraph.agents.seva"

SPEC = AgentSpec(
    name="seva",
    description="Structured attribution check: alignments, reasoning chain, label, confidence, error type (SEVA).",
    tool_name="check_attribution",
    verb="attribute",
    config=f"{_PACKAGE}.schemas:SevaConfig",
    graph_builder="evigraph.graphs.seva:build_seva_graph",
    input_schema=f"{_PACKAGE}.schemas:SevaInputs",
    output_schema=f"{_PACKAGE}.schemas:SevaResult",
    rewards={"process": f"{_PACKAGE}.scoring:REWARD", "binary": f"{_PACKAGE}.scoring:BINARY_REWARD"},
    evaluation=f"{_PACKAGE}.evaluation:EVALUATION",
    hooks={
        "run": f"{_PACKAGE}.hooks:attribute_command",
        "annotate": f"{_PACKAGE}.hooks:annotate_command",
        "evolve": f"{_PACKAGE}.hooks:evolve_command",
    },
    command_help={
        "annotate": "Have a teacher model write checked verdicts for labelled pairs, as fine-tuning data.",
        "evolve": "Find the error types the verifier misses and write probes of them as the next training set.",
    },
    conversation_inputs=f"{_PACKAGE}.conversation:inputs_from",
    verification=f"{_PACKAGE}.verification:to_verification",
    report_view=f"{_PACKAGE}.report_view:report_view",
)
