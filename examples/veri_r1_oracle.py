"""Sanity upper bound: the offline Veri-R1 graph driven by a scripted oracle over the shared eval sets.

The oracle answers every claim with its gold label and gold ids, through the real offline graph (prompt,
generation call, answer parsing, format rules), and the predictions are scored in both modes. Clean mode
must give 100 % everywhere; ``--compat`` must give the reference evaluator's numbers (its NFD-id quirk
included). Run::

    .venv/bin/python examples/veri_r1_oracle.py ../shared/data/veri-r1-claim-verification
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import evigraph
from evigraph.agents.veri_r1.data import ClaimRecord, claim_record_from_mapping
from evigraph.agents.veri_r1.evaluation import PredictionRecord, run_claim, score_predictions
from evigraph.agents.veri_r1.gold import GoldRecord, gold_evidence
from evigraph.evaluation.records import load_records
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.trajectory import Evidence

DATASETS = ("fever", "feverous", "exfever", "hover", "scifact")
_ANSWER_LABEL = {
    "SUPPORT": "SUPPORT",
    "REFUTE": "REFUTE",
    "NOT ENOUGH INFO": "NOT ENOUGH INFO",
    "NOT SUPPORTED": "REFUTE",
}


def oracle_reply(gold: GoldRecord) -> str:
    ids = sorted(gold_evidence(gold, compat=True))  # the ids the evaluator compares against, as stored
    evidence = ", ".join(f"[[{i}]]" for i in ids)
    answer = f"<answer>\nLabel: {_ANSWER_LABEL[gold.label]}\nEvidence: {evidence}\n</answer>"
    return f"<think>The given entries settle it.</think>{answer}"


async def run_oracle(claims: list[ClaimRecord]) -> list[PredictionRecord]:
    by_claim = {c.id: c for c in claims}

    def reply(transcript, params) -> str:
        record_id = transcript[0].text.rsplit("Record: ", 1)[1].split("\n", 1)[0]
        return oracle_reply(by_claim[record_id].gold)

    graph = evigraph.agent("veri-r1", model=ScriptedGenerator(reply), offline=True)
    predictions = []
    for claim in claims:
        # The claim text carries the record id so the scripted oracle can look the answer up.
        ids = sorted(gold_evidence(claim.gold, compat=True)) or ["no entry"]
        given = tuple(Evidence(id=i, text="(gold entry)") for i in ids)
        tagged = claim.model_copy(update={"claim": f"{claim.claim}\nRecord: {claim.id}", "passages": given})
        record = await run_claim(graph, tagged)
        predictions.append(PredictionRecord(id=record.id, response=record.response, output=record.output))
    return predictions


def oracle_reports(data_dir: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{dataset: {"clean": report, "compat": report}}`` with the headline metrics."""
    reports = {}
    for name in DATASETS:
        path = data_dir / f"eval_{name}.jsonl"
        claims = load_records(path, claim_record_from_mapping, id_of=lambda r: r.id)
        predictions = asyncio.run(run_oracle(claims))
        gold = {c.id: c.gold for c in claims if c.gold is not None}
        reports[name] = {
            mode: score_predictions(predictions, gold, compat=mode == "compat").model_dump()
            for mode in ("clean", "compat")
        }
    return reports


def main() -> None:
    data_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/veri-r1-claim-verification")
    reports = oracle_reports(data_dir)
    keys = ("n", "label_accuracy", "verification_accuracy", "joint_accuracy", "evidence_score", "format_rate")
    for name, modes in reports.items():
        for mode, report in modes.items():
            print(
                f"{name:9s} {mode:6s} "
                + "  ".join(f"{k}={report[k]:.4f}" if k != "n" else f"n={report[k]}" for k in keys)
            )


if __name__ == "__main__":
    main()
