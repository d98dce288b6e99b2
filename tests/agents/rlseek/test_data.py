"""RLSeek data: the shipped RAGTruth-format fixture (character-exact by slicing), the RAGTruth loader's filters
and errors, rebalancing, and FaithBench's per-character merging of annotators on the shared release."""

from __future__ import annotations

import json
from collections import Counter
from importlib.resources import files
from pathlib import Path

import pytest

from evigraph.agents.rlseek.data import load_faithbench, load_ragtruth, rebalance, records_from
from evigraph.errors import ConfigError, InputDataError
from tests.markers import requires_shared_data, shared_data

FIXTURE = Path(str(files("evigraph.agents.rlseek.fixtures")))
FAITHBENCH = shared_data("faithbench")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_fixture_is_ragtruth_format_and_character_exact() -> None:
    responses, sources = _rows(FIXTURE / "response.jsonl"), _rows(FIXTURE / "source_info.jsonl")
    assert len(responses) >= 30
    tasks = {s["source_id"]: s["task_type"] for s in sources}
    assert set(tasks.values()) == {"Summary", "QA", "Data2txt"}
    for row in responses:
        assert set(row) >= {"id", "source_id", "model", "temperature", "labels", "split", "quality", "response"}
        for label in row["labels"]:
            assert row["response"][label["start"] : label["end"]] == label["text"]
            assert label["label_type"] in {
                "Evident Conflict",
                "Subtle Conflict",
                "Evident Baseless Info",
                "Subtle Baseless Info",
            }
    per_task = Counter((tasks[r["source_id"]], bool(r["labels"])) for r in responses)
    assert all(per_task[(t, h)] >= 3 for t in ("Summary", "QA", "Data2txt") for h in (True, False))


def test_ragtruth_loader_filters_quality_and_split_and_maps_tasks() -> None:
    test = load_ragtruth(FIXTURE)
    assert len(test) == 31 and {r.meta["split"] for r in test} == {"test"}
    everything = load_ragtruth(FIXTURE, split=None, keep_quality=None)
    assert len(everything) == 34
    qa = next(r for r in test if r.task == "qa")
    assert qa.question and qa.source.startswith("passage 1:")  # D = passages only (O5)
    d2t = next(r for r in test if r.task == "data-to-text")
    assert isinstance(d2t.source, dict)
    assert [r.task for r in load_ragtruth(FIXTURE, tasks=["qa"])] == ["qa"] * 11
    assert records_from(FIXTURE) == test == records_from(FIXTURE / "response.jsonl")


def test_ragtruth_errors_name_file_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "source_info.jsonl").write_text((FIXTURE / "source_info.jsonl").read_text(encoding="utf-8"))
    rows = _rows(FIXTURE / "response.jsonl")[:3]
    rows[1]["labels"] = [{"start": 0, "end": 5, "text": "wrong", "label_type": "Evident Conflict"}]
    (tmp_path / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match=r"response\.jsonl:2: labels\[0\]: response\[0:5\] is 'Marlo'"):
        load_ragtruth(tmp_path)
    rows[1]["labels"], rows[2]["source_id"] = [], "nope"
    (tmp_path / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match=r"response\.jsonl:3: source_id 'nope'"):
        load_ragtruth(tmp_path)
    (tmp_path / "response.jsonl").write_text('{"id": 1}\nnot json\n')
    with pytest.raises(InputDataError, match=r"response\.jsonl:2: not valid JSON"):
        load_ragtruth(tmp_path)


def test_rebalance_equalises_classes_over_tasks_pooled() -> None:
    records = load_ragtruth(FIXTURE)
    balanced = rebalance(records, seed=1)
    positive = sum(bool(r.gold.spans) for r in balanced)
    assert positive == len(balanced) - positive == 11
    assert rebalance(records, seed=1) == balanced and [r.id for r in balanced] == sorted(
        (r.id for r in balanced), key=lambda i: [x.id for x in records].index(i)
    )


@requires_shared_data("faithbench")
def test_faithbench_release_loads_with_union_of_unwanted_spans() -> None:
    records = load_faithbench(FAITHBENCH)
    assert len(records) == 750 and len({r.id for r in records}) == 750
    assert sum(bool(r.gold.spans) for r in records) == 436  # first label Unwanted*; 3 more carry it second
    sample = next(r for r in records if r.id == "faithbench-1-3")
    assert [sample.response[a:b] for a, b in sample.gold.spans] == ["a production budget"]
    agreed = load_faithbench(FAITHBENCH, min_annotators=2)
    assert 0 < sum(bool(r.gold.spans) for r in agreed) < 436
    broader = load_faithbench(FAITHBENCH, labels=["Unwanted", "Unwanted.Intrinsic", "Unwanted.Extrinsic", "Benign"])
    assert sum(bool(r.gold.spans) for r in broader) > 436


def _batch(tmp_path: Path, annotations: list[dict]) -> Path:
    summary = "The film grossed a lot with a production budget of $160 million."
    sample = {"sample_id": 7, "source": "src", "summary": summary, "annotations": annotations, "metadata": {}}
    path = tmp_path / "batch_2.json"
    path.write_text(json.dumps({"samples": [sample]}))
    return path


def _note(annotator: str, start: int, end: int, label: str = "Unwanted") -> dict:
    summary = "The film grossed a lot with a production budget of $160 million."
    return {
        "annotator_id": annotator,
        "label": [label],
        "summary_span": summary[start:end],
        "summary_start": start,
        "summary_end": end,
    }


def test_faithbench_merges_annotators_per_character(tmp_path: Path) -> None:
    notes = [_note("a", 4, 16), _note("a", 10, 22), _note("b", 16, 30), _note("c", 40, 50, "Benign")]
    path = _batch(tmp_path, notes)
    (record,) = load_faithbench(path)
    assert record.id == "faithbench-2-7" and record.gold.spans == ((4, 30),)  # union, touching spans merge
    (record,) = load_faithbench(path, min_annotators=2)
    assert record.gold.spans == ((16, 22),)  # only where a and b agree (a's own overlap counts once)
    (record,) = load_faithbench(path, min_annotators=3)
    assert record.gold.spans == ()


def test_faithbench_offsets_must_match_the_span_text(tmp_path: Path) -> None:
    bad = _note("a", 4, 16)
    bad["summary_span"] = "something else"
    with pytest.raises(ConfigError, match=r"batch_2\.json: samples\[0\]\.annotations\[0\]"):
        load_faithbench(_batch(tmp_path, [bad]))
