"""passage-check: the smallest complete evigraph agent (docs/adding-an-agent.md walks through it).

Given a claim and one passage, the policy answers in one turn whether the passage supports the claim:
``<answer>yes</answer>`` or ``<answer>no</answer>``. Everything the framework needs is declared below; the
commands ``evigraph eval|score|reward passage-check`` come from this declaration, with no CLI code.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

SPEC = AgentSpec(
    name="passage-check",
    description="Does one given passage support a claim? One turn: <answer>yes</answer> or <answer>no</answer>.",
    config="passage_check.schemas:PassageCheckConfig",
    graph_builder="passage_check.graph:build_passage_check_graph",
    input_schema="passage_check.schemas:PassageCheckInputs",
    output_schema="passage_check.schemas:PassageCheckResult",
    rewards={"correct": "passage_check.scoring:REWARD"},
    evaluation="passage_check.evaluation:EVALUATION",
)
