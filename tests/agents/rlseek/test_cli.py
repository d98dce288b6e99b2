"""`evigraph detect|eval|score|reward|prepare ... rlseek` end to end (subprocesses, scripted detector, the
README's file formats and their errors)."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from tests.cli import run_cli, scripted_model, write_jsonl

FIXTURE = Path(str(files("evigraph.agents.rlseek.fixtures")))
T = "The Eiffel Tower is 330 metres tall and was completed in 1899."
D = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
REPLY = (
    '## Step 1: Check "completed in 1899"\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889.\n'
    '## Final Output\n```json\n{"hallucination list": ["1899", "not in the text"]}\n```'
)


def test_detect_prints_spans_with_offsets_and_quotes(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text(D, encoding="utf-8")
    (tmp_path / "answer.txt").write_text(T, encoding="utf-8")
    model = scripted_model(tmp_path / "r.json", [REPLY, REPLY])
    args = ["--source", str(tmp_path / "doc.txt"), "--response", str(tmp_path / "answer.txt"), "--model", model]
    done = run_cli("detect", *args)
    assert done.returncode == 0, done.stderr
    assert "1. [57, 61) “1899”" in done.stdout and "quote “completed in 1889”  source [21, 38)" in done.stdout
    assert "listed but not in the response: “not in the text”" in done.stdout
    assert "response (summary): 1 hallucinated span(s) highlighted" in done.stdout and T in done.stdout
    done = run_cli("detect", *args, "--json")
    assert json.loads(done.stdout)["output"]["spans"][0]["start"] == 57


def test_detect_rejects_bad_input_with_a_clear_message(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "a.txt").write_text("x", encoding="utf-8")
    done = run_cli(
        "detect", "--source", str(tmp_path / "d.json"), "--response", str(tmp_path / "a.txt"), "--task", "data-to-text"
    )
    assert done.returncode != 0 and "a data-to-text source must be a JSON object" in done.stderr
    done = run_cli("detect", "--source", str(tmp_path / "nope.txt"), "--response", str(tmp_path / "a.txt"))
    assert done.returncode == 2 and "--source: no such file" in done.stderr and "nope.txt" in done.stderr
    done = run_cli("detect", "--source", f"@{tmp_path / 'nope.txt'}", "--response", "x")
    assert done.returncode == 2 and "--source: no such file" in done.stderr
    done = run_cli(
        "detect", "--source", str(tmp_path / "a.txt"), "--response", str(tmp_path / "a.txt"), "--task", "poem"
    )
    assert done.returncode != 0 and "task" in done.stderr


def test_eval_on_the_ragtruth_fixture_then_score_and_reward_its_lines(tmp_path: Path) -> None:
    model = scripted_model(tmp_path / "r.json", [REPLY] * 31)
    out = tmp_path / "run"
    done = run_cli("eval", "rlseek", "--data", str(FIXTURE), "--out", str(out), "--model", model, "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["n"] == 31 and set(report["span"]) == {"summary", "qa", "data-to-text", "average"}
    assert report["format_rate"] == 1.0 and report["quotes"]["valid_rate"] == 1.0
    # The same predictions through `score`, with the fixture folder as gold: same numbers.
    done = run_cli("score", "rlseek", "--pred", str(out / "predictions.jsonl"), "--gold", str(FIXTURE))
    assert done.returncode == 0, done.stderr
    scored = json.loads(done.stdout)
    assert scored["span"] == report["span"] and scored["sample"] == report["sample"]
    done = run_cli("reward", "rlseek", "--input", str(out / "predictions.jsonl"))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 31 and all(line["scalar"] == "final" and "steps" in line for line in lines)


def test_score_reads_other_systems_spans_and_names_mismatches(tmp_path: Path) -> None:
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"id": "a", "task": "summary", "spans": [[20, 35], [57, 61]]},
            {"id": "b", "task": "qa", "spans": []},
            {"id": "c", "task": "qa", "spans": [[0, 4]], "extra": "allowed"},
        ],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "a", "spans": [[17, 30], [57, 61], [57, 61]]},
            {"id": "b", "spans": [[0, 3]]},
            {"id": "c", "spans": [], "model": "x"},
        ],
    )
    done = run_cli("score", "rlseek", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    summary = report["span"]["summary"]
    assert summary["precision"] == 14 / 17 and summary["recall"] == 14 / 19
    assert report["span"]["qa"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert report["span"]["average"]["f1"] == summary["f1"] / 2
    assert report["sample"] == {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
        "fnr": 0.5,
        "fpr": 1.0,
        "tp": 1,
        "fp": 1,
        "fn": 1,
        "tn": 0,
    }
    write_jsonl(
        pred, [{"id": "a", "spans": []}, {"id": "b", "spans": []}, {"id": "c", "spans": []}, {"id": "z", "spans": []}]
    )
    done = run_cli("score", "rlseek", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode != 0 and "'z'" in done.stderr and "no gold record" in done.stderr
    write_jsonl(pred, [{"id": "a", "spans": []}])
    done = run_cli("score", "rlseek", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode != 0 and "have no prediction" in done.stderr and "'b'" in done.stderr
    pred.write_text('{"id": "a", "spans": [[5, 2]]}\n{"id": "b"}\n', encoding="utf-8")
    done = run_cli("score", "rlseek", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode != 0 and "pred.jsonl:1" in done.stderr


def test_reward_scores_another_systems_completions(tmp_path: Path) -> None:
    line = {
        "id": "x",
        "task": "summary",
        "source": D,
        "response": T,
        "completion": REPLY,
        "gold": {"spans": [[57, 61]]},
    }
    done = run_cli("reward", "rlseek", "--input", str(write_jsonl(tmp_path / "in.jsonl", [line])))
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(x) for x in done.stdout.splitlines()]
    assert row["span"] == 2 * 4 / (4 + 15 + 4) and row["penalty"] == 0.0 and row["final"] == row["span"]
    done = run_cli("reward", "rlseek", "--input", str(tmp_path / "in.jsonl"), "--reward", "span-only")
    assert done.returncode == 0, done.stderr and json.loads(done.stdout)["scalar"] == "final"


def test_prepare_writes_records_eval_reads(tmp_path: Path) -> None:
    out = tmp_path / "train.jsonl"
    done = run_cli("prepare", "rlseek", "--ragtruth", str(FIXTURE), "--split", "all", "--rebalance", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"n": 24, "hallucinated": 12, "clean": 12}
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["gold"] is not None for r in records) and {r["task"] for r in records} == {
        "summary",
        "qa",
        "data-to-text",
    }
    done = run_cli("prepare", "rlseek", "--out", str(out))
    assert done.returncode != 0 and "exactly one of --ragtruth and --faithbench" in done.stderr


def test_verbs_and_agent_commands_show_their_own_usage_line() -> None:
    for args, usage in ((["detect", "--help"], "Usage: evigraph detect [OPTIONS]"),
                        (["prepare", "rlseek", "--help"], "Usage: evigraph prepare rlseek [OPTIONS]")):  # fmt: skip
        done = run_cli(*args)
        assert done.returncode == 0 and usage in done.stdout, done.stdout[:300]


def test_detect_says_in_one_line_when_it_flags_a_span_no_step_names(tmp_path: Path) -> None:
    # Step 1 checks the year; "330 metres tall" ([20, 35) of T) is listed though no step discusses it.
    reply = (
        '## Step 1: Check "completed in 1899"\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889.\n'
        '## Final Output\n```json\n{"hallucination list": ["1899", "330 metres tall"]}\n```'
    )
    model = scripted_model(tmp_path / "r.json", [reply])
    done = run_cli("detect", "--source", D, "--response", T, "--model", model)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    assert "2. [20, 35) “330 metres tall”" in lines and "named in no reasoning step" in lines
    assert (
        'note: the verdict disagrees with its own reasoning: it flags [20, 35) "330 metres tall", which no reasoning '
        "step names"
    ) in lines
