"""What a finished Veri-R1 run concluded (the agent's half of the graph's ``finish`` node), as a pure function of
the transcript and the run's bookkeeping: label, cited ids, the F1–F8 verdict, confidence and diagnostics."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evigraph.agents.veri_r1.confidence import label_token_probability
from evigraph.agents.veri_r1.format_rules import check_format
from evigraph.agents.veri_r1.labels import normalize_id
from evigraph.agents.veri_r1.parsing import parse_answer
from evigraph.agents.veri_r1.schemas import VeriR1Config, VeriR1Output
from evigraph.trajectory import Segment

__all__ = ("conclude",)


def conclude(
    transcript: Sequence[Segment],
    config: VeriR1Config,
    *,
    seen_ids: Sequence[str],
    queries: Sequence[str],
    duplicate_queries: int,
    n_turns: int,
    n_searches: int,
    decode: Callable[[list[int]], str] | None = None,
) -> VeriR1Output:
    """The run's :class:`VeriR1Output`.

    Args:
        transcript: the whole run (prompt, policy and environment segments).
        config: the run's options (variant, format switches, ``restrict_to_retrieved``).
        seen_ids: every id the model was shown, in first-seen order.
        queries: the searches run, in order.
        duplicate_queries: how many of them repeated an earlier query.
        n_turns: policy turns generated.
        n_searches: searches run.
        decode: the backend's ids → text (token backends); with logprobs it gives the label's confidence.
    """
    policy = [s for s in transcript if s.origin == "policy"]
    answer = parse_answer("".join(s.text for s in policy))
    report = check_format(transcript, config.format.model_copy(update={"offline": config.offline}))
    seen = {normalize_id(i) for i in seen_ids}
    cited = list(answer.evidence)
    unseen = [i for i in cited if i not in seen]
    if config.restrict_to_retrieved:
        cited = [i for i in cited if i in seen]
    confidence = None
    last = policy[-1] if policy else None
    if last is not None and answer.label and decode is not None and last.token_ids and last.logprobs:
        confidence = label_token_probability(last.token_ids, last.logprobs, decode)
    return VeriR1Output(
        label=answer.label,
        evidence=cited,
        answered=answer.n_blocks > 0,
        format_ok=report.ok,
        format_failed=list(report.failed),
        queries=list(queries),
        duplicate_queries=duplicate_queries,
        retrieved_ids=list(seen_ids),
        cited_unretrieved=unseen,
        confidence=confidence,
        n_turns=n_turns,
        n_searches=n_searches,
    )
