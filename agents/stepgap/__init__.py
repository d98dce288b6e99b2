"""StepGap: a step-level evidence-gap checker for search-interleaved traces and its typed process reward
(specs/stepgap.md).

Pieces: :mod:`.labels` (no-gap / CC / IE / MB and repair actions), :mod:`.schemas` (traces, the judge's JSON,
checks, config), :mod:`.claims` (what each stage reads), :mod:`.routing` (stages A–E as pure functions),
:mod:`.prompts` and :mod:`.judge` (the LLM stages), :mod:`.rewards` (pure reward functions), :mod:`.scoring`
(the reward object), :mod:`.metrics` and :mod:`.evaluation` (checker and answer evaluation), :mod:`.data`
(records), :mod:`.hooks` (``evigraph check``), :mod:`.checker_job` (StepGap as a frozen checker in another
agent's training), :mod:`.distill` (a student's SFT examples). Graphs: :mod:`evigraph.graphs.stepgap_checker`
(the checker), :mod:`evigraph.graphs.stepgap` (Search-R1 rollouts checked step by step),
:mod:`evigraph.graphs.search_r1` (the generator). This module only declares the agent.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_PACKAGE = "evigraph.agents.stepgap"

SPEC = AgentSpec(
    name="stepgap",
    description="Step-level evidence-gap checker (LLM stages A-C, NLI stages D-E) over Search-R1 rollouts.",
    tool_name="check_steps",
    tool_inputs=("trace",),  # not "checked": earlier checks are kept unjudged
    verb="check",
    config=f"{_PACKAGE}.schemas:StepGapConfig",
    graph_builder="evigraph.graphs.stepgap:build_stepgap_graph",
    input_schema=f"{_PACKAGE}.schemas:StepGapInputs",
    output_schema=f"{_PACKAGE}.schemas:StepGapResult",
    rewards={"typed": f"{_PACKAGE}.scoring:REWARD"},
    evaluation=f"{_PACKAGE}.evaluation:EVALUATION",
    resources=("search", "nli"),
    hooks={"run": f"{_PACKAGE}.hooks:check_command"},
    checker=f"{_PACKAGE}.checker_job:StepGapChecker",
    distill=f"{_PACKAGE}.distill:student_examples_of",
    conversation_inputs=f"{_PACKAGE}.conversation:inputs_from",
    verification=f"{_PACKAGE}.verification:to_verification",
    # Embedded, StepGap checks a host's own steps: its checker graph, not the Search-R1 rollout graph.
    verifier_builder="evigraph.graphs.stepgap_checker:build_checker_graph",
    verifier_input_schema=f"{_PACKAGE}.schemas:CheckerInputs",
    report_view=f"{_PACKAGE}.report_view:report_view",
)
