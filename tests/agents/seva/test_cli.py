"""`evigraph attribute|eval|score|reward|annotate|evolve ... seva` end to end (subprocesses, scripted models, the
README's file formats and their errors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import run_cli, scripted_model, write_jsonl

CLAIM = "The bridge opened in 1932."
SOURCE = "The bridge was opened to traffic in March 1932 by the mayor of Springfield."
VERDICT = {
    "evidence_alignment": [{"claim_span": "opened in 1932", "source_span": "opened to traffic in March 1932",
                            "status": "match"}],
    "reasoning_chain": [{"claim_part": "opened in 1932", "source_evidence": "opened to traffic in March 1932",
                         "judgment": "supported", "explanation": "Same year as the source."}],
    "label": "Attributable", "confidence": 0.9,
}  # fmt: skip
REPLY = json.dumps(VERDICT)


def test_attribute_prints_the_verdict(tmp_path: Path) -> None:
    (tmp_path / "source.txt").write_text(SOURCE, encoding="utf-8")
    model = scripted_model(tmp_path / "r.json", [REPLY, REPLY])
    done = run_cli("attribute", "--claim", CLAIM, "--source", f"@{tmp_path / 'source.txt'}", "--model", model)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert lines[0] == "Attributable (confidence 0.90)"
    assert "opened in 1932 opened to traffic in March 1932 match [15, 46)" in lines  # where it is in the source
    assert "opened in 1932 supported Same year as the source." in lines
    done = run_cli("attribute", "--claim", CLAIM, "--source", SOURCE, "--model", model, "--json")
    assert json.loads(done.stdout)["output"]["label"] == "Attributable"
    unreadable = scripted_model(tmp_path / "bad.json", ["no json here", "still none"])
    done = run_cli("attribute", "--claim", CLAIM, "--source", SOURCE, "--model", unreadable)
    assert done.returncode == 1 and "unreadable verdict" in done.stdout


def test_score_reads_labels_through_the_alias_table_and_names_bad_lines(tmp_path: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [
        {"id": "1", "label": "Attributable"}, {"id": "2", "label": "not attributable"}, {"id": "3", "label": False},
        {"id": "4", "label": True},
    ])  # fmt: skip
    pred = write_jsonl(tmp_path / "pred.jsonl", [
        {"id": "1", "label": "entailment", "extra": 1}, {"id": "2", "label": False}, {"id": "3", "label": "yes"},
        {"id": "4", "label": 1},  # not a string or a boolean: counts as wrong
    ])  # fmt: skip
    done = run_cli("score", "seva", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["accuracy"] == 0.5 and report["fpr"] == 0.0 and report["fnr"] == 0.5
    assert {"macro_f1", "f1_attributable", "f1_not_attributable"} <= set(report)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "1", "label": "Attributable"}, {"id": "2"}])
    done = run_cli("score", "seva", "--pred", str(bad), "--gold", str(gold))
    assert done.returncode != 0 and "bad.jsonl:2" in done.stderr and "label" in done.stderr
    bad_gold = write_jsonl(tmp_path / "g2.jsonl", [{"id": "1", "label": "maybe"}])
    done = run_cli("score", "seva", "--pred", str(pred), "--gold", str(bad_gold))
    assert done.returncode != 0 and "g2.jsonl:1" in done.stderr


def test_eval_score_and_reward_on_our_own_runs(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": "a", "claim": CLAIM, "source": SOURCE, "label": "Attributable"},
        {"id": "b", "claim": "The bridge opened in 1935.", "source": SOURCE, "label": "Not Attributable"},
    ])  # fmt: skip
    model = scripted_model(tmp_path / "r.json", [REPLY, REPLY])
    out = tmp_path / "run"
    done = run_cli("eval", "seva", "--data", str(data), "--out", str(out), "--model", model, "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    headline = json.loads(done.stdout)
    assert headline["accuracy"] == 0.5 and headline["format_rate"] == 1.0 and headline["fpr"] == 0.0
    report = json.loads((out / "report.json").read_text())
    assert report["confusion"]["Not Attributable"]["Attributable"] == 1 and report["structure"]["grounded_share"] == 1
    assert (out / "confusion.png").is_file() and (out / "error_types.png").is_file()
    done = run_cli("score", "seva", "--pred", str(out / "predictions.jsonl"), "--gold", str(data))
    assert json.loads(done.stdout)["macro_f1"] == headline["macro_f1"]
    done = run_cli("reward", "seva", "--input", str(out / "predictions.jsonl"))
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    by_id = {x["id"]: x for x in lines}
    assert by_id["a"]["reward"] == pytest.approx(1.0 + 0.15 * 0.9) and by_id["b"]["calibration"] == pytest.approx(-0.09)
    foreign = write_jsonl(tmp_path / "foreign.jsonl", [{"id": "x", "claim": CLAIM, "source": SOURCE, "completion": "{}",
                                                   "gold": {"label": "Attributable"}}])  # fmt: skip
    done = run_cli("reward", "seva", "--input", str(foreign), "--reward", "binary")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["reward"] == 0.0
    done = run_cli("reward", "seva", "--input", str(foreign), "--process-share", "0.9")
    assert json.loads(done.stdout.splitlines()[0])["reward"] == pytest.approx(0.2 * 0.9 / 7)


def test_annotate_validates_teacher_replies_and_reports_acceptance(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "pairs.jsonl", [
        {"id": "a", "claim": CLAIM, "source": SOURCE, "label": "Attributable"},
        {"id": "b", "claim": "The bridge opened in 1935.", "source": SOURCE, "label": "Not Attributable"},
    ])  # fmt: skip
    # a: one bad reply then a good one; b: three replies with the wrong label -> discarded
    teacher = scripted_model(tmp_path / "t.json", ["{broken", REPLY, REPLY, REPLY, REPLY])
    out = tmp_path / "sft.jsonl"
    done = run_cli(
        "annotate", "seva", "--data", str(data), "--out", str(out), "--teacher", teacher, "--concurrency", "1"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["accepted"] == 1 and summary["acceptance_rate"] == 0.5 and summary["mean_attempts"] == 2.5
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert [m["role"] for m in line["messages"]] == ["system", "user", "assistant"]
    assert json.loads(line["messages"][-1]["content"]) == VERDICT and "Claim: <claim>" in line["messages"][1]["content"]
    (rejected,) = [json.loads(x) for x in (tmp_path / "sft.rejected.jsonl").read_text().splitlines()]
    assert rejected["id"] == "b" and "disagrees with the gold label" in rejected["problems"][0]


def test_evolve_writes_every_stage_and_resumes_without_the_model(tmp_path: Path) -> None:
    pairs = [
        {"id": "a", "claim": "Apple released the iPhone in 2007.", "source": "Apple released the first iPhone in "
         "2007 in San Francisco; Samsung followed.", "label": "Attributable"},
        {"id": "b", "claim": "Revenue grew by 15% in the third quarter.", "source": "In the third quarter, revenue "
         "grew by 15% at Contoso.", "label": "Attributable"},
        {"id": "c", "claim": "The CEO announced the merger.", "source": "The CEO denied the merger.",
         "label": "Not Attributable"},
    ]  # fmt: skip
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    model = scripted_model(tmp_path / "r.json", [REPLY] * 60)  # always "Attributable": every probe is missed
    out = tmp_path / "loop"
    args = ["evolve", "seva", "--data", str(data), "--out", str(out), "--rounds", "2", "--budget", "6"]
    done = run_cli(*args, "--model", model, "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    rounds = json.loads(done.stdout)["rounds"]
    assert rounds[0]["profile"]["uniform"] and sum(rounds[0]["allocation"].values()) == 6
    assert rounds[0]["probes_accepted"] >= 3
    assert rounds[0]["entity_finder"] == "capitalised-chunks" or rounds[0]["entity_finder"].startswith("spacy:")
    probes = [json.loads(x) for x in (out / "round-0" / "probes.jsonl").read_text().splitlines()]
    assert all(p["label"] == "Not Attributable" and p["category"] and p["parent_id"] in {"a", "b"} for p in probes)
    profile = rounds[1]["profile"]
    assert not profile["uniform"] and rounds[1]["n"] == 3 + len(probes)
    assert all(profile["detection"][p["category"]] == 0.0 for p in probes)  # the scripted verifier caught none
    train = [json.loads(x) for x in (out / "round-0" / "train.jsonl").read_text().splitlines()]
    assert len(train) == 3 + 2 * len(probes) and all(json.loads(t["label"])["gold"]["label"] for t in train)
    for name in ("reflect.json", "attempts.jsonl", "next.jsonl", "train_records.jsonl", "verify/report.json"):
        assert (out / "round-1" / name).is_file(), name
    # A rerun finds every artefact: no model call at all (the same model now has no reply left to give).
    done = run_cli(*args, "--model", scripted_model(tmp_path / "r.json", []), "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rounds"][1]["profile"] == profile
    assert json.loads(done.stdout)["rounds"][0]["entity_finder"] is None  # the probes were read back


def test_attribute_prints_no_confidence_a_reply_never_stated(tmp_path: Path) -> None:
    # No "confidence" key: the verdict states none, so the output shows none (not an invented 0.00).
    reply = json.dumps({key: value for key, value in VERDICT.items() if key != "confidence"})
    model = scripted_model(tmp_path / "r.json", [reply])
    done = run_cli("attribute", "--claim", CLAIM, "--source", SOURCE, "--model", model)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert lines[0] == "Attributable"
    assert "0.00" not in done.stdout and "confidence" not in done.stdout


def test_attribute_says_when_the_label_contradicts_its_reasoning_and_shows_no_word_in_pieces(tmp_path: Path) -> None:
    # What the embedded model wrote under its grammar: Attributable over two not_supported steps, confidence 0,
    # and explanations stopped at the 60-character bound in the middle of a word ("fee" of "feet").
    cut = "The claim says 300 feet while the source gives about 142 fee"
    reply = json.dumps({
        **VERDICT,
        "reasoning_chain": [
            {"claim_part": "opened in 1932", "source_evidence": "opened to traffic in March 1932",
             "judgment": "not_supported", "explanation": cut},
            {"claim_part": "The bridge", "source_evidence": "", "judgment": "not_supported",
             "explanation": "Nothing in the source names it."},
        ],
        "confidence": 0.0,
    })  # fmt: skip
    model = scripted_model(tmp_path / "r.json", [reply, reply])
    done = run_cli("attribute", "--claim", CLAIM, "--source", SOURCE, "--model", model)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert lines[0] == "Attributable (confidence 0.00)"  # stated by the model, so shown -- and called out below
    note = (
        "note: the verdict disagrees with its own reasoning: labelled Attributable, but step 1 judges not_supported, "
        "step 2 judges not_supported and its stated confidence in that label is 0"
    )
    assert note in lines
    assert "opened in 1932 not_supported The claim says 300 feet while the source gives about 142…" in lines
    assert "142 fee" not in done.stdout
    # Under --json the trajectory alone is on stdout; the line goes to stderr.
    done = run_cli("attribute", "--claim", CLAIM, "--source", SOURCE, "--model", model, "--json")
    assert json.loads(done.stdout)["output"]["label"] == "Attributable"
    assert note in " ".join(done.stderr.split())
