"""Task names as data files write them: ``score`` takes any non-empty name and reports metrics under it; a run
(``eval``, ``reward``, ``detect``) maps ours or RAGTruth's names (``QA``, ``Summary``, ``Data2txt``, any case) to
a prompt variant in one place and refuses an unknown name, listing the known ones."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import pytest

from evigraph.agents.rlseek.data import records_from
from evigraph.agents.rlseek.evaluation import EVALUATION
from evigraph.agents.rlseek.schemas import RAGTRUTH_TASKS, TASKS, task_variant
from evigraph.errors import InputDataError
from tests.agents.rlseek.test_cli import REPLY
from tests.cli import run_cli, scripted_model, write_jsonl

FIXTURE = Path(str(files("evigraph.agents.rlseek.fixtures")))
RAGTRUTH_NAME = {variant: name for name, variant in RAGTRUTH_TASKS.items()}
"""Our variant → RAGTruth's ``task_type`` (the names of the fixture's own ``source_info.jsonl``)."""


def test_ours_and_ragtruths_names_map_to_one_variant_in_any_case() -> None:
    assert {name: task_variant(name) for name in ("QA", "Summary", "Data2txt", "qa", "DATA2TXT", "Claim")} == {
        "QA": "qa",
        "Summary": "summary",
        "Data2txt": "data-to-text",
        "qa": "qa",
        "DATA2TXT": "data-to-text",
        "Claim": "claim",
    }
    assert all(task_variant(t) == t for t in TASKS)
    assert set(RAGTRUTH_NAME.values()) == {
        json.loads(line)["task_type"] for line in (FIXTURE / "source_info.jsonl").read_text().splitlines()
    }
    with pytest.raises(ValueError, match=r"unknown task 'poem' for a run: .*summary, qa, data-to-text, claim, Summ"):
        task_variant("poem")


def test_score_reports_each_task_under_the_name_the_gold_file_gives(tmp_path: Path) -> None:
    response = "The tower is 330 metres tall and was completed in 1899."
    gold = write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {"id": "a", "task": "QA", "spans": [[50, 54]], "task_type": "ignored"},
            {"id": "b", "task": "Summary", "spans": []},
            {"id": "c", "task": "Data2txt", "spans": [[0, 9]]},
            {"id": "d", "task": "dialogue", "spans": [[4, 9]]},  # another set's own name
            {"id": 5, "task": "qa", "spans": [[0, 3]]},  # a different name from "QA": its own key
        ],
    )
    pred = write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": "a", "spans": [[50, 54]], "response": response},
            {"id": "b", "spans": []},
            {"id": "c", "spans": [[0, 4]], "task": "Data2txt"},
            {"id": "d", "spans": [[0, 9]]},
            {"id": "5", "spans": []},
        ],
    )
    golds = EVALUATION.read_gold(gold)
    assert [g.task for g in golds.values()] == ["QA", "Summary", "Data2txt", "dialogue", "qa"]
    pairs = [(p, golds[p.id]) for p in EVALUATION.read_predictions(pred)]
    span = EVALUATION.report(pairs, None).span
    assert list(span) == ["Data2txt", "QA", "Summary", "dialogue", "qa", "average"]
    assert span["QA"].f1 == 1.0 and span["qa"].recall == 0.0 and span["dialogue"].precision == 5 / 9
    assert span["Data2txt"].precision == 1.0 and span["Data2txt"].recall == 4 / 9
    done = run_cli("score", "rlseek", "--pred", str(pred), "--gold", str(gold))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["span"]["QA"] == span["QA"].model_dump()


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"id": "a", "task": "", "spans": []}, "task"),
        ({"id": "a", "spans": []}, "task"),
        ({"id": "a", "task": "QA", "spans": [[3, 1]]}, "spans"),
    ],
)
def test_a_bad_gold_line_is_refused_naming_file_line_and_field(tmp_path: Path, line: dict, field: str) -> None:
    gold = write_jsonl(tmp_path / "gold.jsonl", [{"id": "ok", "task": "QA", "spans": []}, line])
    with pytest.raises(InputDataError, match=rf"gold\.jsonl:2: .*\b{field}\b"):
        EVALUATION.read_gold(gold)


def test_eval_runs_ragtruth_names_as_their_variants_and_reports_under_the_names(tmp_path: Path) -> None:
    chosen = [next(r for r in records_from(FIXTURE) if r.task == t and r.gold.spans) for t in RAGTRUTH_NAME]
    renamed = [{**r.model_dump(mode="json"), "task": RAGTRUTH_NAME[r.task]} for r in chosen]
    data = write_jsonl(tmp_path / "records.jsonl", renamed)
    assert [EVALUATION.graph_input(r)["task"] for r in records_from(data)] == [r.task for r in chosen]
    listed = {"summary": ["voted unanimously"], "qa": ["4 minutes for a soft yolk"], "data-to-text": ["free WiFi"]}
    replies = [REPLY.replace('["1899", "not in the text"]', json.dumps(listed[r.task])) for r in chosen]
    model = scripted_model(tmp_path / "r.json", replies)
    out = tmp_path / "run"
    done = run_cli("eval", "rlseek", "--data", str(data), "--out", str(out), "--model", model, "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert set(report["span"]) == {"Summary", "QA", "Data2txt", "average"}
    assert [report["span"][name]["precision"] for name in ("Summary", "QA", "Data2txt")] == [1.0, 9 / 25, 0.0]
    # The same predictions scored against the same records under our variant names: the same numbers per task.
    same = write_jsonl(tmp_path / "variants.jsonl", [r.model_dump(mode="json") for r in chosen])
    done = run_cli("score", "rlseek", "--pred", str(out / "predictions.jsonl"), "--gold", str(same))
    assert done.returncode == 0, done.stderr
    variants = json.loads(done.stdout)["span"]
    assert {name: report["span"][name] for name in RAGTRUTH_NAME.values()} == {
        name: variants[variant] for variant, name in RAGTRUTH_NAME.items()
    }


def test_a_run_refuses_an_unknown_task_naming_file_line_and_the_known_names(tmp_path: Path) -> None:
    lines = [
        {"id": 1, "task": "Summary", "source": "s", "response": "r"},
        {"id": 2, "task": "dialogue", "source": "s", "response": "r"},
    ]
    with pytest.raises(InputDataError, match=r"records\.jsonl:2: field task: .*'dialogue'.*data-to-text.*Data2txt"):
        records_from(write_jsonl(tmp_path / "records.jsonl", lines))


def test_reward_maps_the_lines_task_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    line = {
        "id": "x",
        "task": "Summary",
        "source": "The Eiffel Tower was completed in 1889. It is 330 metres tall.",
        "response": "The Eiffel Tower is 330 metres tall and was completed in 1899.",
        "completion": REPLY,
        "gold": {"spans": [[57, 61]]},
    }
    (prediction,) = EVALUATION.read_predictions(write_jsonl(tmp_path / "in.jsonl", [line]))
    assert EVALUATION.trajectory_of(prediction).input["task"] == "summary"
    (unknown,) = EVALUATION.read_predictions(write_jsonl(tmp_path / "in.jsonl", [{**line, "task": "dialogue"}]))
    with pytest.raises(ValueError, match=r"prediction 'x': unknown task 'dialogue' for a run: expected one of"):
        EVALUATION.trajectory_of(unknown)
    done = run_cli("reward", "rlseek", "--input", str(write_jsonl(tmp_path / "in.jsonl", [line])))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["span"] == 2 * 4 / (4 + 15 + 4)  # as with "summary" (test_cli)
