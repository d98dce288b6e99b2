"""`evigraph rank|eval|score|reward|meta-eval ... rag-zeval` end to end (subprocesses, scripted evaluators, the
README's file formats and their errors, RAGChecker's release as it is)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evigraph.agents.rag_zeval.prompts import assign_letters, content_key
from tests.cli import run_cli, scripted_model, write_jsonl
from tests.markers import shared_data

QUESTION = "When did the bridge open?"
REFERENCE = "The bridge over the river opened to traffic in March 1932. It is 503 metres long and carries four lanes."
GOOD, MIDDLE, POOR = "It opened in March 1932.", "It opened in 1932 and has six lanes.", "It opened in 1950."
EVIDENCE = "The bridge over the river opened to traffic in March 1932."  # 12 tokens: long enough to count


def reply(letters: tuple[str, ...], labels: list[list[bool]]) -> str:
    """A well-formed reply; ``labels[i]`` are the claim labels of candidate ``i`` (shown as ``letters[i]``)."""
    items = [
        {"id": letter, "answer": "...", "atomic_claims": [
            {"claim": f"claim {k}", "is_supported": label, "grounding_evidence": [EVIDENCE] if label else [],
             "analysis": "compared with the context"} for k, label in enumerate(labels[i])]}
        for i, letter in enumerate(letters)
    ]  # fmt: skip
    return json.dumps(sorted(items, key=lambda item: item["id"]))


def test_rank_scores_answer_files_and_prints_the_ranking(tmp_path: Path) -> None:
    paths = []
    for name, text in (("a.txt", POOR), ("b.txt", GOOD)):
        (tmp_path / name).write_text(text + "\n", encoding="utf-8")
        paths.append(str(tmp_path / name))
    letters = assign_letters(2, seed=0, key=content_key(QUESTION, [POOR, GOOD]))
    model = scripted_model(tmp_path / "r.json", [reply(letters, [[False], [True, True]])] * 2)
    # The shape: --responses a.txt b.txt (the second file arrives as a positional argument).
    done = run_cli("rank", "--question", QUESTION, "--reference", REFERENCE, "--responses", *paths, "--model", model)
    assert done.returncode == 0, done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    best, worst = (
        f"1 {paths[1]} (shown as {letters[1]}) 2/2 = 1.000",
        f"2 {paths[0]} (shown as {letters[0]}) 0/1 = 0.000",
    )
    assert lines.index(best) < lines.index(worst)
    assert (
        f"{paths[1]}: {GOOD}" in lines
        and "supported claim 0 The bridge over the river opened to traffic in March 1932." in lines
    )
    assert "unsupported claim 0 -" in lines
    done = run_cli("rank", "--question", QUESTION, "--reference", REFERENCE, "--responses", paths[0],
                   "--responses", paths[1], "--model", model, "--json")  # fmt: skip
    assert json.loads(done.stdout)["output"]["letters"] == list(letters)
    done = run_cli("rank", "--question", QUESTION, "--reference", REFERENCE, "--responses", paths[0], "--model", model)
    assert done.returncode != 0 and "at least two answers" in done.stderr
    unreadable = scripted_model(tmp_path / "bad.json", ["no JSON, no ids"])
    done = run_cli("rank", "--question", QUESTION, "--reference", REFERENCE, "--responses", *paths,
                   "--model", unreadable)  # fmt: skip
    assert done.returncode == 1 and "unreadable evaluation" in done.stdout


def _ranked_sets(tmp_path: Path) -> Path:
    candidates = [{"text": t, "alpha": a} for t, a in ((GOOD, 0.0), (MIDDLE, -1.0), (POOR, -1.4))]
    return write_jsonl(tmp_path / "sets.jsonl", [
        {"id": f"s{k}", "question": QUESTION, "reference": REFERENCE, "candidates": candidates} for k in range(2)
    ])  # fmt: skip


def test_eval_score_and_reward_on_synthesised_sets(tmp_path: Path) -> None:
    data = _ranked_sets(tmp_path)
    right = reply(assign_letters(3, seed=0, key="s0"), [[True], [True, False], [False]])
    tied = reply(assign_letters(3, seed=0, key="s1"), [[True], [True], [False]])
    model = scripted_model(tmp_path / "r.json", [right, tied])
    out = tmp_path / "run"
    done = run_cli("eval", "rag-zeval", "--data", str(data), "--out", str(out), "--model", model, "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["ranking_accuracy"] == 0.5 and report["top1_accuracy"] == 0.5 and report["format_rate"] == 1.0
    assert report["pairwise_accuracy"] == pytest.approx(5 / 6) and report["pair_ties"] == pytest.approx(1 / 6)
    assert report["reward"]["reward"] == pytest.approx((1.5 + 0.0) / 2)  # every evidence string is verbatim
    done = run_cli("reward", "rag-zeval", "--input", str(out / "predictions.jsonl"))
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(x)["reward"] for x in done.stdout.splitlines()) == [0.0, 1.5]
    # Another system's scores, in the gold file's candidate order.
    scores = [{"id": "s0", "scores": [1, 0.5, 0]}, {"id": "s1", "scores": [0, 1, 0]}]
    pred = write_jsonl(tmp_path / "pred.jsonl", scores)
    done = run_cli("score", "rag-zeval", "--pred", str(pred), "--gold", str(data))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ranking_accuracy"] == 0.5
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "s0", "scores": [1, 0.5, 0]}, {"id": "s1"}])
    done = run_cli("score", "rag-zeval", "--pred", str(bad), "--gold", str(data))
    assert done.returncode != 0 and "bad.jsonl:2" in done.stderr and "scores" in done.stderr


def test_a_ranked_set_with_tied_alphas_or_twin_answers_is_refused_with_its_line(tmp_path: Path) -> None:
    rows = [{"id": "x", "question": QUESTION, "reference": REFERENCE,
             "candidates": [{"text": GOOD, "alpha": 0}, {"text": GOOD, "alpha": -1}]}]  # fmt: skip
    done = run_cli("eval", "rag-zeval", "--data", str(write_jsonl(tmp_path / "d.jsonl", rows)), "--out", str(tmp_path))
    assert done.returncode != 0 and "d.jsonl:1" in done.stderr and "same text" in done.stderr


def test_meta_eval_reproduces_ragcheckers_published_correlations() -> None:
    release = shared_data("ragchecker-meta-eval")
    if not release.is_dir():
        pytest.skip("shared data is not here")
    done = run_cli("meta-eval", "rag-zeval", "--human", str(release / "human_labeled_data.json"),
                   "--system", str(release / "baseline_ragchecker.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["scale"] == "fraction" and body["instances"] == 280
    published = {"correctness": (49.66, 46.95), "completeness": (60.67, 58.11), "overall": (61.93, 60.90)}
    for aspect, (pearson, spearman) in published.items():
        measured = (round(body[aspect]["pearson"] * 100, 2), round(body[aspect]["spearman"] * 100, 2))
        assert measured == (pearson, spearman)
        assert -1 <= body[aspect]["kendall"] <= 1 and body[aspect]["n"] == 560


def test_meta_eval_runs_our_evaluator_on_the_release_and_on_wikieval(tmp_path: Path) -> None:
    release = shared_data("ragchecker-meta-eval")
    if not release.is_dir():
        pytest.skip("shared data is not here")
    rows = json.loads((release / "human_labeled_data.json").read_text(encoding="utf-8"))
    ids = list(dict.fromkeys(str(r["instance_id"]) for r in rows))[:4]
    labels = [[[True], [False]], [[False], [True]], [[True], [True, False]], [[False], [True, True]]]
    replies = [reply(assign_letters(2, seed=0, key=i), lab) for i, lab in zip(ids, labels, strict=True)]
    wiki = write_jsonl(tmp_path / "wikieval.jsonl", [
        {"question": QUESTION, "context_v1": [REFERENCE], "answer": GOOD, "ungrounded_answer": POOR},
        {"question": "How long is it?", "context_v1": [REFERENCE], "answer": "503 metres.",
         "ungrounded_answer": "1 km."},
    ])  # fmt: skip
    replies += [
        reply(assign_letters(2, seed=0, key="wikieval-0"), [[True], [False]]),
        reply(assign_letters(2, seed=0, key="wikieval-1"), [[True], [True]]),  # a tie
    ]
    model = scripted_model(tmp_path / "r.json", replies)
    out = tmp_path / "meta"
    args = ["meta-eval", "rag-zeval", "--human", str(release / "human_labeled_data.json"), "--wikieval", str(wiki),
            "--out", str(out), "--limit", "4", "--concurrency", "1", "--model", model]  # fmt: skip
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["instances"] == 4 and body["correctness"]["n"] == 8 and "completeness" not in body
    assert body["wikieval"] == {"best": 1.0, "middle": 0.75, "worst": 0.5, "n": 2, "wins": 1, "ties": 1}
    system = json.loads((out / "ragchecker" / "system_scores.json").read_text())
    assert [r["model1"]["rag_zeval"]["correctness_label"] for r in system] == [1.0, 0.0, 1.0, 0.0]
    assert [r["model2"]["rag_zeval"]["correctness_label"] for r in system] == [0.0, 1.0, 0.5, 1.0]
    scripted_model(tmp_path / "r.json", [])  # same model spec, no replies left: a rerun must resume, not call it
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == body
    done = run_cli("meta-eval", "rag-zeval", "--wikieval", str(wiki), "--model", model)
    assert done.returncode != 0 and "--out" in done.stderr


def test_meta_eval_reports_an_undefined_correlation_for_a_system_that_never_separates_responses(
    tmp_path: Path,
) -> None:
    release = shared_data("ragchecker-meta-eval")
    if not release.is_dir():
        pytest.skip("shared data is not here")
    rows = json.loads((release / "baseline_ragchecker.json").read_text(encoding="utf-8"))
    flat = [{"instance_id": r["instance_id"], "dataset": r["dataset"],
             "model1": {"mine": {"correctness_label": 1.0}}, "model2": {"mine": {"correctness_label": 1.0}}}
            for r in rows]  # fmt: skip
    system = tmp_path / "flat.json"
    system.write_text(json.dumps(flat), encoding="utf-8")
    done = run_cli("meta-eval", "rag-zeval", "--human", str(release / "human_labeled_data.json"),
                   "--system", str(system))  # fmt: skip
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["correctness"] is None and "constant" in body["note"]
    assert body["human_agreement"]["correctness"]["n"] == 280
