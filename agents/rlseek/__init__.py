"""RLSeek: quote-then-judge hallucination span detection (specs/rlseek.md).

Pieces: :mod:`.protocol` (the ``<quote>`` tag), :mod:`.schemas` (config, inputs, the detection), :mod:`.prompts`
(the four task variants, escaping), :mod:`.parsing` (rules P1-P5), :mod:`.verdict` (a completion to a
detection, quotes checked against the source), :mod:`.spans`, :mod:`.rewards` (pure §3 components),
:mod:`.scoring` (the reward objects), :mod:`.metrics` (§4), :mod:`.data` (records, RAGTruth and FaithBench),
:mod:`.evaluation` (the adapter), :mod:`.hooks` (``evigraph detect``, ``evigraph prepare rlseek``). The graph is
:mod:`evigraph.graphs.rlseek`. This module only declares the agent.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_PACKAGE = "evigraph.agents.rlseek"

SPEC = AgentSpec(
    name="rlseek",
    description="Hallucination span detection: every step quotes the source verbatim, then judges (RLSeek).",
    tool_name="detect_hallucinated_spans",
    verb="detect",
    config=f"{_PACKAGE}.schemas:RLSeekConfig",
    graph_builder="evigraph.graphs.rlseek:build_rlseek_graph",
    input_schema=f"{_PACKAGE}.schemas:RLSeekInputs",
    output_schema=f"{_PACKAGE}.schemas:RLSeekResult",
    rewards={"final": f"{_PACKAGE}.scoring:REWARD", "span-only": f"{_PACKAGE}.scoring:SPAN_ONLY_REWARD"},
    evaluation=f"{_PACKAGE}.evaluation:EVALUATION",
    hooks={"run": f"{_PACKAGE}.hooks:detect_command", "prepare": f"{_PACKAGE}.hooks:prepare_command"},
    command_help={"prepare": "Turn the RAGTruth or FaithBench release into records for eval and training."},
    conversation_inputs=f"{_PACKAGE}.conversation:inputs_from",
    verification=f"{_PACKAGE}.verification:to_verification",
    report_view=f"{_PACKAGE}.report_view:report_view",
)
