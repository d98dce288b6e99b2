"""`evigraph check|score|reward stepgap` end to end (subprocesses, scripted judge, the README's record formats)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.stepgap.doubles import judgement
from tests.cli import run_cli, write_jsonl
from tests.markers import requires_pyserini

TRACE = {
    "question": "Who directed Whiplash?",
    "steps": [
        {
            "reasoning": "Whiplash was directed by Damien Chazelle.",
            "query": "Whiplash director",
            "evidence": [
                {"id": "w", "title": "Whiplash", "text": "Whiplash is a 2014 film directed by Damien Chazelle."}
            ],
        },
        {"reasoning": "So the director is Chazelle.", "answer": "Damien Chazelle"},
    ],
}


def test_check_prints_labels_paths_and_names_the_fallback_nli(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    replies = tmp_path / "judge.json"
    quote = "a 2014 film directed by Damien Chazelle"
    replies.write_text(json.dumps([judgement(found=True, quote=quote), judgement(match=False)]), encoding="utf-8")
    done = run_cli("check", str(trace), "--model", f"scripted:{replies}", "--json")
    assert done.returncode == 0, done.stderr
    checks = json.loads(done.stdout)
    # Step 1: quote → D; the scripted judge scores all three label words alike → NEUTRAL → MB. Step 2: IE.
    assert [c["label"] for c in checks["steps"]] == ["MB", "IE"]
    assert checks["steps"][0]["pipeline_path"].endswith("stageC:quote_found, stageD:neutral")
    assert checks["nli"].startswith("generator:")  # which NLI ran is always named
    done = run_cli("check", str(trace), "--judge", f"scripted:{replies}")  # the same judge under --judge
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "1 Whiplash was directed by Damien Chazelle. MB bridging-search 0.76" in lines  # the steps table
    assert "search: Whiplash director" in lines and "2 So the director is Chazelle. IE re-search 1.00" in lines
    assert "answer: Damien Chazelle" in lines
    assert lines[lines.index("step 1 (inference): MB") + 1 :][:4] == [
        "A (alignment): the step stays on the question",
        "B (abstention): the step does not abstain",
        "C (entity and quote): a verbatim quote of the evidence backs the step",
        "D (quote entails claim): the quote neither entails nor contradicts the claim",
    ]
    assert "C (entity and quote): the evidence is about another entity" in lines
    assert "IE = irrelevant evidence: search again; MB = missing bridge: search for the linking fact" in lines


def test_check_exits_non_zero_when_the_judge_fails_and_names_a_bad_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(TRACE), encoding="utf-8")
    replies = tmp_path / "judge.json"
    replies.write_text(json.dumps(["no json"] * 4), encoding="utf-8")
    done = run_cli("check", str(trace), "--model", f"scripted:{replies}")
    assert done.returncode == 1 and "could not be checked" in done.stderr
    trace.write_text(json.dumps({"question": "Q?", "steps": []}), encoding="utf-8")
    done = run_cli("check", str(trace), "--model", f"scripted:{replies}")
    assert done.returncode != 0 and "trace.json" in done.stderr and "steps" in done.stderr


def test_score_prints_the_documented_keys(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"id": "q1", "answer_correct": False, "steps": [{"label": "IE"}, {"label": "MB"}]},
            {"id": "q2", "answer_correct": True, "steps": [{"label": "no-gap"}, {"label": "no-gap"}]},
            {"id": "q3", "answer_correct": False, "steps": [{"label": "CC"}, {"label": "no-gap"}]},
        ],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "q1", "steps": [{"label": "IE"}, {"label": "no-gap"}]},
            {"id": "q2", "steps": [{"label": "no-gap"}, {"label": "MB"}]},
            {"id": "q3", "steps": [{"label": "CC"}, {"label": "no-gap"}]},
        ],
    )
    done = run_cli("score", "stepgap", "--pred", str(pred), "--gold", str(gold), "--resamples", "50")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # Steps: TP 2 (q1 s1, q3 s1), FN 1 (q1 s2), FP 1 (q2 s2), TN 2 → P 2/3, R 2/3.
    assert report["step"]["precision"] == pytest.approx(2 / 3) and report["step"]["recall"] == pytest.approx(2 / 3)
    for key in ("f1", "balanced_accuracy", "kappa", "ci"):
        assert key in report["step"]
    assert set(report["step"]["ci"]) >= {"precision", "recall", "f1"}
    # Questions: wrong q1, q3 both flagged (TP 2), correct q2 flagged (FP 1) → Q-F1 = 4/5.
    assert report["question"]["f1"] == pytest.approx(0.8)
    assert set(report["typed_f1"]) >= {"CC", "IE", "MB"}
    assert set(report["distribution"]) == {"no-gap", "CC", "IE", "MB"}
    assert report["first_gap"]["IE"] == pytest.approx(0.5) and report["first_gap"]["CC"] == pytest.approx(0.5)


def test_score_refuses_a_step_count_mismatch_and_a_bad_label_with_file_and_line(tmp_path: Path) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "q1", "answer_correct": False, "steps": [{"label": "IE"}]}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "steps": [{"label": "IE"}, {"label": "MB"}]}])
    done = run_cli("score", "stepgap", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode != 0 and "'q1'" in done.stderr and "2 steps" in done.stderr
    write_jsonl(tmp_path / "pred.jsonl", [{"id": "q1", "steps": [{"label": "GAP"}]}])
    done = run_cli("score", "stepgap", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode != 0 and "pred.jsonl:1" in done.stderr and "label" in done.stderr


def test_reward_emits_the_return_and_per_step_terms_for_each_preset(tmp_path: Path) -> None:
    # G-2 of spec §3.3: S(IE, "Whiplash director"), S(no-gap, "Damien Chazelle films 2017"), A(MB); EM 0.
    trace = {
        "id": "g2",
        "em": 0,
        "steps": [
            {"kind": "search", "text": "Find the director.", "query": "Whiplash director", "label": "IE"},
            {"kind": "search", "text": "Look at his films.", "query": "Damien Chazelle films 2017", "label": "no-gap"},
            {"kind": "answer", "text": "It is La La Land.", "query": None, "label": "MB"},
        ],
    }
    data = write_jsonl(tmp_path / "traces.jsonl", [trace])
    done = run_cli("reward", "stepgap", "--input", str(data))
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["id"] == "g2" and line["return"] == pytest.approx(0.15)
    terms = [v for s in line["steps"] for v in (s["base"], s["shape"])]
    assert terms == pytest.approx([-0.10, 0.0, 0.20, 0.10, -0.05, 0.0])
    for preset, lam, expected in (("binary_gap", 1.0, 0.20), ("untyped_dense", 1.0, 0.0), ("typed_shape", 2.0, 0.30)):
        done = run_cli("reward", "stepgap", "--input", str(data), "--preset", preset, "--lam", str(lam))
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["return"] == pytest.approx(expected), preset
    write_jsonl(tmp_path / "traces.jsonl", [{**trace, "em": 3}])
    done = run_cli("reward", "stepgap", "--input", str(data))
    assert done.returncode != 0 and "traces.jsonl:1" in done.stderr


@requires_pyserini
@pytest.mark.java
def test_eval_runs_rollouts_checks_them_and_reports(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": "When was Hog Island Light first lit?", "golds": ["1852"]}]
    data = write_jsonl(tmp_path / "questions.jsonl", rows)
    replies = tmp_path / "replies.json"
    replies.write_text(
        json.dumps(
            [
                "<think>I need the year.</think>\n<search>Hog Island Light first lit</search>",
                "<think>It was first lit in 1852.</think>\n<answer>1852</answer>",
                judgement(),  # step 1 (inference, no quote): no-gap
                judgement(),  # step 2 (conclusion, no quote): stage E over step 1's passages
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    env = {"EVIGRAPH_CACHE_DIR": str(tmp_path / "cache")}
    done = run_cli(
        "eval", "stepgap", "--data", str(data), "--out", str(out), "--corpus", "demo",
        "--model", f"scripted:{replies}", "--concurrency", "1", env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "predictions.jsonl").read_text(encoding="utf-8"))
    labels = [s["label"] for s in record["output"]["checks"]["steps"]]
    assert labels[0] == "no-gap" and labels[1] in {"no-gap", "IE"}
    assert record["rewards"]["return"] == pytest.approx(
        record["rewards"]["em"] + 0.2 + (0.2 if labels[1] == "no-gap" else -0.1)
    )
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["n_questions"] == 1 and report["nli"][0].startswith("generator:")
    assert (out / "gap_distribution.png").is_file() or any(out.rglob("gap_distribution.png"))
