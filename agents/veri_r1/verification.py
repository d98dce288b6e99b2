"""Veri-R1's result as the one embedding verdict (``AgentSpec.verification``).

``passed``: the claim was judged SUPPORT (REFUTE and NOT ENOUGH INFO fail; a host that accepts an honest
"not enough information" passes ``pass_if=lambda v: v.label in ("SUPPORT", "NOT ENOUGH INFO")``). ``evidence``:
the cited entry ids with the text the run was shown for them. ``confidence``: the label token's probability
where the backend gives logprobs. ``repair``: what to tell the host's model about a refuted or unsupported
claim, naming the cited ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evigraph.agents.veri_r1.data import information_entries
from evigraph.agents.veri_r1.schemas import VeriR1Output
from evigraph.verification import CitedEvidence, Verification, failure_of

__all__ = ("to_verification",)

_REPAIR = {
    "REFUTE": "The evidence contradicts this claim{cited}. Correct the answer so it agrees with that evidence.",
    "NOT ENOUGH INFO": "The evidence found does not establish this claim{cited}. Say what is uncertain, or find a "
    "source that states it, before answering.",
    None: "The claim could not be verified. Check it against a source before answering.",
}


def to_verification(result: Mapping[str, Any]) -> Verification:
    """The verdict of one Veri-R1 run (its graph's result: ``output`` and ``trajectory``)."""
    output = VeriR1Output.model_validate(result["output"])
    trajectory = result.get("trajectory")
    shown = {
        entry.id: entry.text
        for segment in getattr(trajectory, "segments", ())
        if segment.origin == "environment"
        for entry in information_entries(segment.text)
    }
    evidence = [CitedEvidence(id=i, text=shown.get(i)) for i in output.evidence]
    error = failure_of(trajectory)
    passed = output.label == "SUPPORT" and error is None
    # Only ids the run was shown are named back: a cited id is model text, a shown one came from the corpus.
    known = [i for i in output.evidence if i in shown]
    cited = f" (see {', '.join(known)})" if known else ""
    return Verification(
        agent="veri-r1",
        passed=passed,
        label=output.label,
        confidence=output.confidence,
        evidence=evidence,
        repair=None if passed else _REPAIR.get(output.label, _REPAIR[None]).format(cited=cited),
        error=error,
        detail=output.model_dump(mode="json"),
    )
