"""`evigraph eval|score|reward|filter veri-r1` end to end with scripted models (offline variant: no JVM)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.markers import requires_pyserini

LABELS = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


def _records(n: int) -> list[dict]:
    records = []
    for i in range(n):
        records.append(
            {
                "id": i,  # an integer id, as some shared files have: compared as a string
                "claim": f"Tower {i} was first lit in 18{50 + i}.",
                "label": LABELS[i % 3],
                "evidence": [] if i % 3 == 2 else [f"Tower {i}_sentence_0"],
                "passages": [
                    {"id": f"Tower {i}_sentence_0", "text": f"Tower {i} was first lit in 18{50 + i}."},
                    {"id": "Other_sentence_3", "text": "Unrelated text."},
                ],
                "extra_field": "ignored",
            }
        )
    return records


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _support_reply() -> str:
    return "<think>The entry states it.</think><answer>\nLabel: SUPPORT\nEvidence: [[Tower 0_sentence_0]]\n</answer>"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evigraph.cli.app", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}


def _slow_eval(tmp_path: Path, n: int, *, concurrency: int) -> tuple[list[str], Path]:
    """An ``eval`` command line over ``n`` records whose scripted replies take 0.4 s each, and its output folder."""
    data = _write_jsonl(tmp_path / "claims.jsonl", _records(n))
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps({"replies": [_support_reply()] * n, "delay_s": 0.4}), encoding="utf-8")
    out = tmp_path / "run"
    command = _cli(
        "eval", "veri-r1", "--data", str(data), "--out", str(out), "--offline",
        "--model", f"scripted:{replies}", "--concurrency", str(concurrency),
    )  # fmt: skip
    return command, out


def test_eval_survives_sigkill_and_resumes_without_loss_or_duplicates(tmp_path: Path) -> None:
    n = 12
    command, out = _slow_eval(tmp_path, n, concurrency=2)
    process = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    predictions = out / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if predictions.is_file() and predictions.read_text(encoding="utf-8").count("\n") >= 3:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    done_before = predictions.read_text(encoding="utf-8").count("\n")
    assert 3 <= done_before < n
    with predictions.open("a", encoding="utf-8") as handle:  # what a kill in the middle of a write leaves
        handle.write('{"id": "7", "claim": "Tow')
    finished = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    ids = [json.loads(line)["id"] for line in predictions.read_text(encoding="utf-8").splitlines()]
    assert sorted(ids, key=int) == [str(i) for i in range(n)]
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["n"] == n and report["run"]["already_done"] == done_before
    # The scripted teacher always answers SUPPORT: a third of the labels are right.
    assert report["label_accuracy"] == pytest.approx(1 / 3)
    for key in ("verification_accuracy", "joint_accuracy", "evidence_score", "format_rate"):
        assert 0.0 <= report[key] <= 1.0
    assert report["format_rate"] == 1.0 and set(report["per_class"]) == {"SUPPORT", "REFUTE", "NOT ENOUGH INFO"}
    for plot in ("confusion.png", "per_class.png"):
        assert (out / plot).read_bytes().startswith(b"\x89PNG")
    # score over the stored predictions reproduces the report.
    scored = subprocess.run(
        _cli("score", "veri-r1", "--pred", str(predictions), "--gold", str(tmp_path / "claims.jsonl")),
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["label_accuracy"] == report["label_accuracy"]


def test_eval_refuses_to_mix_settings_in_one_run_directory(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "claims.jsonl", _records(2))
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([_support_reply()] * 2), encoding="utf-8")
    base = ["eval", "veri-r1", "--data", str(data), "--out", str(tmp_path / "run"), "--offline"]
    first = subprocess.run(_cli(*base, "--model", f"scripted:{replies}"), env=_env(), capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    other = subprocess.run(
        _cli(*base, "--model", f"scripted:{replies}", "--max-searches", "2"), env=_env(), capture_output=True, text=True
    )
    assert other.returncode == 2 and "other settings" in other.stderr


def test_the_per_turn_cap_from_the_environment_or_config_file_reaches_the_graph(tmp_path: Path) -> None:
    """Issue 8: generator.max_new_tokens from EVIGRAPH_* or evigraph.toml used to be replaced by the agent's 512."""
    data = _write_jsonl(tmp_path / "claims.jsonl", _records(1))
    replies = tmp_path / "replies.json"
    long_reply = "<think>" + "word " * 40 + "</think>" + _support_reply()
    replies.write_text(json.dumps([long_reply]), encoding="utf-8")
    for name, env, config_text, cap in (
        ("env", {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "7"}, "", 7),
        ("file", {}, "[generator]\nmax_new_tokens = 9\n[agents.veri-r1]\nmax_searches = 2\n", 9),
    ):
        (tmp_path / "evigraph.toml").write_text(config_text, encoding="utf-8")
        out = tmp_path / name
        command = _cli("eval", "veri-r1", "--data", str(data), "--out", str(out), "--offline")
        result = subprocess.run(
            [*command, "--model", f"scripted:{replies}"],
            env={**_env(), **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        pinned = json.loads((out / "run.json").read_text(encoding="utf-8"))["config"]
        assert pinned["max_new_tokens"] == pinned["offline_max_new_tokens"] == cap
        assert pinned["max_searches"] == (2 if name == "file" else 3)
        record = json.loads((out / "predictions.jsonl").read_text(encoding="utf-8"))
        policy = [s for s in record["trajectory"]["segments"] if s["origin"] == "policy"]
        # The scripted backend counts whitespace pieces: the turn was cut at the cap.
        assert policy[0]["finish_reason"] == "length" and len(policy[0]["text"].split()) == cap


def test_eval_names_file_and_line_of_a_bad_record(tmp_path: Path) -> None:
    data = tmp_path / "claims.jsonl"
    data.write_text(json.dumps(_records(1)[0]) + "\n" + '{"id": 5}\n', encoding="utf-8")
    result = subprocess.run(
        _cli("eval", "veri-r1", "--data", str(data), "--out", str(tmp_path / "run"), "--offline", "--model", "x"),
        env=_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{data}:2" in result.stderr and "claim" in result.stderr


def test_eval_refuses_a_record_without_its_gold_label_before_the_run(tmp_path: Path) -> None:
    """Issue 6: a record without ``label`` used to run with the others, and the run then failed at scoring time
    with "prediction id(s) have no gold record" and no report.json."""
    rows = _records(3)
    del rows[2]["label"]
    data = _write_jsonl(tmp_path / "claims.jsonl", rows)
    out = tmp_path / "run"
    # "--model x" names no model: the refusal comes before any model would load.
    result = subprocess.run(
        _cli("eval", "veri-r1", "--data", str(data), "--out", str(out), "--offline", "--model", "x"),
        env=_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert f"{data}:3: field 'label' is missing (the scorer of veri-r1 needs it)" in result.stderr
    assert not out.exists()


def test_eval_help_names_the_fields_a_record_needs() -> None:
    result = subprocess.run(_cli("eval", "veri-r1", "--help"), env=_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.replace("│", " ").split())
    assert "one record per line, with id, claim;" in help_text
    assert "every record also needs its gold: label." in help_text


def test_ctrl_c_says_what_is_kept_and_the_rerun_says_what_it_skips(tmp_path: Path) -> None:
    """Issue 7: Ctrl-C used to exit 130 without a word, and a resumed run did not say it skipped anything."""
    n = 8
    command, out = _slow_eval(tmp_path, n, concurrency=1)
    # A Ctrl-C reaches the child even where this test runs with SIGINT ignored (a background job).
    process = subprocess.Popen(
        command,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    predictions = out / "predictions.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if predictions.is_file() and predictions.read_text(encoding="utf-8").count("\n") >= 2:
            break
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    kept = predictions.read_text(encoding="utf-8").count("\n")
    assert process.returncode == 130, stderr
    assert 2 <= kept < n
    said = " ".join(stderr.split())
    assert f"interrupted: {kept} of {n} records are done and kept in {predictions}" in said
    assert "run the same command to resume" in said
    resumed = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"already holds {kept} of {n} records: skipping them" in " ".join(resumed.stderr.split())
    assert predictions.read_text(encoding="utf-8").count("\n") == n


def test_score_accepts_foreign_records_and_reward_emits_components(tmp_path: Path) -> None:
    gold = _write_jsonl(
        tmp_path / "gold.jsonl",
        [
            {
                "id": 1,
                "question": "c1",
                "golden_answers": {"label": "SUPPORTS", "evidence": ["A", "B"]},
                "data_source": "fever",
            },
            {
                "id": 2,
                "question": "c2",
                "golden_answers": {"label": "NOT ENOUGH INFO", "evidence": []},
                "data_source": "fever",
            },
        ],
    )
    good = "<plan>p</plan><think>t</think><answer>Label: SUPPORT\nEvidence: [[A]], [[B]]</answer>"
    pred = _write_jsonl(
        tmp_path / "pred.jsonl",
        [
            {"id": 1, "response": good, "model": "x"},
            {"id": "2", "response": "<answer>Label: REFUTE\nEvidence:</answer>"},
        ],
    )
    scored = subprocess.run(
        _cli("score", "veri-r1", "--pred", str(pred), "--gold", str(gold)), env=_env(), capture_output=True, text=True
    )
    assert scored.returncode == 0, scored.stderr
    report = json.loads(scored.stdout)
    assert report["label_accuracy"] == 0.5 and report["joint_accuracy"] == 0.5 and report["format_rate"] == 0.5
    rewards = subprocess.run(
        _cli("reward", "veri-r1", "--input", str(pred), "--gold", str(gold)), env=_env(), capture_output=True, text=True
    )
    assert rewards.returncode == 0, rewards.stderr
    rows = [json.loads(line) for line in rewards.stdout.splitlines()]
    assert rows[0]["id"] == "1" and rows[0]["total"] == pytest.approx(4.0)
    assert rows[1]["label"] == 0.0 and rows[1]["evidence"] == 1.0  # both evidence sets empty: IoU 1 by convention
    assert {row["scalar"] for row in rows} == {"total"}  # the scalar the agent declares
    compat = subprocess.run(
        _cli("reward", "veri-r1", "--input", str(pred), "--gold", str(gold), "--reward", "compat-training"),
        env=_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert compat.returncode == 0, compat.stderr
    compat_rows = [json.loads(line) for line in compat.stdout.splitlines()]
    assert compat_rows[1]["evidence"] == 0.0  # the reference gives no evidence credit on an empty gold set
    unknown = subprocess.run(
        _cli("reward", "veri-r1", "--input", str(pred), "--reward", "nope"), env=_env(), capture_output=True, text=True
    )
    assert unknown.returncode == 2 and "has no reward 'nope'; it has: final, compat-training" in unknown.stderr


def test_filter_keeps_only_exactly_right_samples(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "train.jsonl", _records(3))
    # Record 0 (SUPPORTS, [Tower 0_sentence_0]) is answered exactly right; 1 gets the wrong label; 2 (NEI) cites extra.
    replies = [
        "<think>t</think><answer>Label: SUPPORT\nEvidence: [[Tower 0_sentence_0]]</answer>",
        "<think>t</think><answer>Label: SUPPORT\nEvidence: [[Tower 1_sentence_0]]</answer>",
        "<think>t</think><answer>Label: NOT ENOUGH INFO\nEvidence: [[Other_sentence_3]]</answer>",
    ]
    teacher = tmp_path / "teacher.json"
    teacher.write_text(json.dumps(replies), encoding="utf-8")
    out = tmp_path / "filtered"
    result = subprocess.run(
        _cli(
            "filter", "veri-r1", "--data", str(data), "--out", str(out),
            "--teacher", f"scripted:{teacher}", "--concurrency", "1",
        ),
        env=_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    kept = [json.loads(line) for line in (out / "kept.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in kept] == [0] and kept[0]["extra_field"] == "ignored"  # the line is copied verbatim


@pytest.mark.java
@requires_pyserini
def test_verify_searches_the_demo_corpus_and_prints_label_and_evidence(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(
        json.dumps(
            [
                "<plan>Find when the first tower was lit.</plan>\n<search>Hog Island Light first lit</search>",
                "<think>The first tower was lit in 1852.</think>\n"
                "<answer>\nLabel: REFUTE\nEvidence: [[Hog Island Light_sentence_0]]\n</answer>",
            ]
        ),
        encoding="utf-8",
    )
    env = {**_env(), "EVIGRAPH_CACHE_DIR": str(tmp_path / "cache")}
    claim = "Hog Island Light was first lit in 1853."
    result = subprocess.run(
        _cli("verify", claim, "--corpus", "demo", "--model", f"scripted:{replies}"),
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Label: REFUTE" in result.stdout
    # The cited entry is shown with the text the search returned (the demo corpus is grouped by 3 sentences).
    assert "[[Hog Island Light_sentence_0]]: Hog Island Light was a lighthouse" in " ".join(result.stdout.split())
    assert "format ok" in result.stdout
    as_json = subprocess.run(
        _cli("verify", claim, "--corpus", "demo", "--model", f"scripted:{replies}", "--json"),
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    trajectory = json.loads(as_json.stdout)
    assert trajectory["output"]["label"] == "REFUTE" and trajectory["agent"] == "veri-r1"
    assert [s["origin"] for s in trajectory["segments"]] == ["prompt", "policy", "environment", "policy"]


def test_plots_include_reliability_when_confidences_exist(tmp_path: Path) -> None:
    from evigraph.agents.veri_r1.evaluation import write_plots
    from evigraph.agents.veri_r1.gold import GoldRecord
    from evigraph.agents.veri_r1.metrics import Prediction, aggregate, score_instance

    gold = GoldRecord(id="1", label="SUPPORT", raw_label="SUPPORTS", evidence=("A",))
    scores = [
        score_instance(Prediction(id="1", label="SUPPORT", evidence=("A",), format_ok=True, confidence=0.97), gold),
        score_instance(Prediction(id="1", label="REFUTE", evidence=(), format_ok=True, confidence=0.42), gold),
    ]
    report = aggregate(scores)
    assert report.confidence is not None and any(b.n == 0 for b in report.confidence.bins)  # empty bins exist
    paths = write_plots(report, tmp_path)
    assert [p.name for p in paths] == ["confusion.png", "per_class.png", "reliability.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def test_a_failed_run_exits_non_zero_and_both_url_forms_reach_the_server(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["<plan>p</plan><search>Hog Island</search>", _support_reply()]), encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/retrieve"  # nothing listens there
    failed = subprocess.run(
        _cli("verify", "A claim.", "--retriever-url", closed, "--model", f"scripted:{replies}"),
        env=_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert failed.returncode == 1 and "run failed in search" in failed.stderr
