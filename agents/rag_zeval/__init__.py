"""RAG-Zeval: rule-guided end-to-end faithfulness/correctness evaluation trained with a ranking reward
(specs/rag-zeval.md).

Pieces: :mod:`.schemas` (config, inputs, the parsed evaluation, ranked candidate sets), :mod:`.prompts` (the
evaluator prompt, letter shuffling, the reply schema for guided decoding), :mod:`.parsing` (§2.2 strict and
lenient reading, the §3.1 format gate), :mod:`.rewards` (pure §3 components), :mod:`.scoring` (the reward
objects), :mod:`.metrics` (ranking accuracy), :mod:`.evaluation` (the adapter), :mod:`.cad` and
:mod:`.synthesis` (context-aware decoding of ranked candidates, §2.4, from :mod:`.synthesis_prompts` and the
inputs of :mod:`.synthesis_data`), :mod:`.ragchecker` and :mod:`.wikieval`
(meta-evaluation, §4: RAGChecker correlations via :mod:`.correlation`, WikiEval pairwise agreement; both read
their releases through :mod:`.rows`), :mod:`.hooks` (``evigraph rank``, ``evigraph synthesize
rag-zeval``, ``evigraph meta-eval rag-zeval``). The graph is :mod:`evigraph.graphs.rag_zeval`. This module only
declares the agent.
"""

from evigraph.registry import AgentSpec

__all__ = ("SPEC",)

_PACKAGE = "evigraph.agents.rag_zeval"

SPEC = AgentSpec(
    name="rag-zeval",
    description="Claim-level faithfulness/correctness of several answers in one pass, and their ranking (RAG-Zeval).",
    tool_name="rank_answers",
    verb="rank",
    config=f"{_PACKAGE}.schemas:RagZevalConfig",
    graph_builder="evigraph.graphs.rag_zeval:build_rag_zeval_graph",
    input_schema=f"{_PACKAGE}.schemas:RagZevalInputs",
    output_schema=f"{_PACKAGE}.schemas:RagZevalResult",
    rewards={"ranking": f"{_PACKAGE}.scoring:REWARD", "best": f"{_PACKAGE}.scoring:BEST_REWARD"},
    evaluation=f"{_PACKAGE}.evaluation:EVALUATION",
    hooks={
        "run": f"{_PACKAGE}.hooks:rank_command",
        "synthesize": f"{_PACKAGE}.hooks:synthesize_command",
        "meta-eval": f"{_PACKAGE}.hooks:meta_eval_command",
    },
    command_help={
        "synthesize": "Make training sets of candidate answers in a known order, by context-aware decoding.",
        "meta-eval": "Measure how well the rankings agree with human judgements (RAGChecker, WikiEval).",
    },
    conversation_inputs=f"{_PACKAGE}.conversation:inputs_from",
    verification=f"{_PACKAGE}.verification:to_verification",
    report_view=f"{_PACKAGE}.report_view:report_view",
)
