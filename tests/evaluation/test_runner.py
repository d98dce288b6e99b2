from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from evigraph.errors import ConfigError, InputDataError
from evigraph.evaluation.runner import RunSummary, read_results, run_records, write_report

HELPER = Path(__file__).with_name("_killable_run.py")


class Result(BaseModel):
    id: str
    value: int
    error: str | None = None


def ids(n: int) -> list[str]:
    return [f"r{i:03d}" for i in range(n)]


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_lines(path: Path, records: list[dict], *, tail: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")


class Recorder:
    """A fake run_one that sleeps, records which ids ran, and tracks the most calls in flight."""

    def __init__(self, delay: float = 0.01, fail_ids: frozenset[str] = frozenset()) -> None:
        self.delay = delay
        self.fail_ids = fail_ids
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def __call__(self, record_id: str) -> Result:
        self.calls.append(record_id)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        return Result(id=record_id, value=int(record_id[1:]), error="failed" if record_id in self.fail_ids else None)


async def run(items: list[str], run_one, out: Path, **kwargs) -> RunSummary:
    kwargs.setdefault("progress", False)
    return await run_records(items, run_one, id_of=lambda x: x, out_path=out, **kwargs)


async def test_concurrency_bound_is_respected(tmp_path: Path) -> None:
    recorder = Recorder(delay=0.01)
    summary = await run(ids(30), recorder, tmp_path / "out.jsonl", concurrency=3)
    assert recorder.max_in_flight == 3
    assert summary.total == summary.ran == 30
    assert summary.already_done == summary.failed == 0
    assert sorted(r["id"] for r in lines_of(tmp_path / "out.jsonl")) == ids(30)


async def test_concurrency_one_runs_in_order(tmp_path: Path) -> None:
    recorder = Recorder(delay=0)
    await run(ids(5), recorder, tmp_path / "out.jsonl", concurrency=1)
    assert recorder.max_in_flight == 1
    assert [r["id"] for r in lines_of(tmp_path / "out.jsonl")] == ids(5)


async def test_resume_skips_done_ids(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "out.jsonl"
    out.parent.mkdir()
    write_lines(out, [{"id": "r000", "value": 0, "error": None}, {"id": "r003", "value": 3, "error": "x"}])
    recorder = Recorder()
    summary = await run(ids(6), recorder, out)
    assert sorted(recorder.calls) == ["r001", "r002", "r004", "r005"]
    assert (summary.total, summary.already_done, summary.ran, summary.previously_failed) == (6, 2, 4, 1)
    assert sorted(r["id"] for r in lines_of(out)) == ids(6)
    # A second run finds everything done.
    again = Recorder()
    summary = await run(ids(6), again, out)
    assert again.calls == [] and summary.ran == 0 and summary.already_done == 6


async def test_creates_missing_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "out.jsonl"
    await run(ids(2), Recorder(), out)
    assert len(lines_of(out)) == 2


async def test_torn_tail_is_repaired(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    write_lines(out, [{"id": "r000", "value": 0}, {"id": "r001", "value": 1}], tail='{"id": "r002", "val')
    recorder = Recorder()
    summary = await run(ids(4), recorder, out)
    assert sorted(recorder.calls) == ["r002", "r003"]
    assert summary.already_done == 2
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n") and '"val{' not in text
    assert sorted(r["id"] for r in lines_of(out)) == ids(4)


async def test_torn_tail_that_is_the_whole_file(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "r0', encoding="utf-8")
    await run(ids(2), Recorder(), out)
    assert sorted(r["id"] for r in lines_of(out)) == ids(2)


async def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "r000", "value": 0}', encoding="utf-8")
    recorder = Recorder()
    await run(ids(2), recorder, out)
    assert recorder.calls == ["r001"]
    assert [r["id"] for r in lines_of(out)] == ["r000", "r001"]


@pytest.mark.parametrize(
    ("bad_line", "needle"),
    [("{not json\n", "corrupt result line"), ("[1, 2]\n", "string `id`"), ('{"value": 1}\n', "string `id`")],
)
async def test_corrupt_middle_line_is_an_error_and_file_unchanged(tmp_path: Path, bad_line: str, needle: str) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "r000", "value": 0}\n' + bad_line + '{"id": "r001", "value": 1}\n', encoding="utf-8")
    before = out.read_bytes()
    recorder = Recorder()
    with pytest.raises(InputDataError, match=needle) as info:
        await run(ids(3), recorder, out)
    assert str(info.value).startswith(f"{out}:2:")
    assert (info.value.path, info.value.line) == (str(out), 2)
    assert out.read_bytes() == before
    assert recorder.calls == []


async def test_corrupt_last_line_with_newline_is_not_a_torn_tail(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "r000", "value": 0}\n{"id": "r0\n', encoding="utf-8")
    with pytest.raises(InputDataError, match=":2:"):
        await run(ids(3), Recorder(), out)


async def test_duplicate_ids_in_output_are_an_error(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    write_lines(out, [{"id": "r000"}, {"id": "r001"}, {"id": "r000"}])
    with pytest.raises(InputDataError, match=r"lines 1 and 3"):
        await run(ids(3), Recorder(), out)


async def test_run_one_exception_keeps_finished_results_and_reraises(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    started: list[str] = []

    async def run_one(record_id: str) -> Result:
        started.append(record_id)
        number = int(record_id[1:])
        if number == 5:
            await asyncio.sleep(0.01)
            raise RuntimeError("bug in the agent")
        # r006..r008 are in flight when r005 raises; they take longer and must still be written.
        await asyncio.sleep(0.05 if number > 5 else 0.001)
        return Result(id=record_id, value=number)

    with pytest.raises(RuntimeError, match="bug in the agent"):
        await run(ids(50), run_one, out, concurrency=4)
    written = sorted(r["id"] for r in lines_of(out))
    assert "r005" not in written
    assert set(started) - {"r005"} == set(written)  # every started record (but the failing one) was written
    assert {"r006", "r007", "r008"} <= set(written)
    assert len(started) < 50  # scheduling stopped

    # Resuming after the bug is fixed runs exactly the rest.
    recorder = Recorder(delay=0)
    summary = await run(ids(50), recorder, out)
    assert summary.already_done == len(written) and summary.ran == 50 - len(written)
    assert sorted(r["id"] for r in lines_of(out)) == ids(50)


async def test_wrong_result_id_is_an_error(tmp_path: Path) -> None:
    async def run_one(record_id: str) -> Result:
        return Result(id="other", value=0)

    with pytest.raises(ValueError, match="must equal id_of"):
        await run(ids(3), run_one, tmp_path / "out.jsonl")


async def test_result_must_be_a_model(tmp_path: Path) -> None:
    async def run_one(record_id: str) -> dict:
        return {"id": record_id}

    with pytest.raises(TypeError, match="pydantic model"):
        await run(ids(1), run_one, tmp_path / "out.jsonl")


async def test_retry_failed_reruns_only_failed(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    failing = frozenset({"r001", "r004"})
    summary = await run(ids(6), Recorder(fail_ids=failing), out)
    assert summary.failed == 2

    # Without retry_failed, failed results count as done.
    recorder = Recorder()
    summary = await run(ids(6), recorder, out)
    assert recorder.calls == [] and summary.previously_failed == 2

    recorder = Recorder()
    summary = await run(ids(6), recorder, out, retry_failed=True)
    assert sorted(recorder.calls) == sorted(failing)
    assert (summary.already_done, summary.ran, summary.failed, summary.previously_failed) == (4, 2, 0, 0)
    records = lines_of(out)
    assert sorted(r["id"] for r in records) == ids(6)  # no duplicates
    assert all(r["error"] is None for r in records)
    assert not (tmp_path / "out.jsonl.tmp").exists()


async def test_ids_not_in_input_are_kept_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    out = tmp_path / "out.jsonl"
    write_lines(out, [{"id": "stranger", "value": 9}])
    with caplog.at_level(logging.WARNING, logger="evigraph.evaluation.runner"):
        summary = await run(ids(2), Recorder(), out)
    assert "stranger" in caplog.text
    assert summary.extra_in_output == 1 and summary.already_done == 0
    assert sorted(r["id"] for r in lines_of(out)) == ["r000", "r001", "stranger"]


async def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        await run(ids(2), Recorder(), tmp_path / "out.jsonl", concurrency=0)
    with pytest.raises(ConfigError, match="duplicate"):
        await run(["a", "a"], Recorder(), tmp_path / "out.jsonl")


async def test_empty_input(tmp_path: Path) -> None:
    summary = await run([], Recorder(), tmp_path / "out.jsonl")
    assert (summary.total, summary.ran) == (0, 0)


async def test_cancellation_keeps_finished_results(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    recorder = Recorder(delay=0.02)
    task = asyncio.create_task(run(ids(200), recorder, out, concurrency=4))
    deadline = time.monotonic() + 20
    while (not out.exists() or len(lines_of(out)) < 8) and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    written = {r["id"] for r in lines_of(out)}
    assert 8 <= len(written) < 200
    assert recorder.in_flight == 0  # in-flight calls were cancelled, not left running
    again = Recorder(delay=0)
    await run(ids(200), again, out)
    assert not written & set(again.calls)
    assert sorted(r["id"] for r in lines_of(out)) == ids(200)


async def test_progress_bar_runs_without_a_tty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await run(ids(5), Recorder(delay=0), tmp_path / "out.jsonl", progress=True, description="veri-r1")
    err = capsys.readouterr().err
    assert "veri-r1" in err and "5/5" in err


def test_read_results_tolerates_torn_tail_only(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    write_lines(out, [{"id": "a", "value": 1}, {"id": "b", "value": 2}], tail='{"id": "c", "va')
    assert [r.id for r in read_results(out, Result)] == ["a", "b"]
    write_lines(out, [{"id": "a", "value": 1}, {"id": "b"}])
    with pytest.raises(InputDataError, match=r":2: field value"):
        read_results(out, Result)


def test_write_report_is_atomic_and_indented(tmp_path: Path) -> None:
    path = write_report(tmp_path / "run", Result(id="x", value=3))
    assert path == tmp_path / "run" / "report.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {"id": "x", "value": 3, "error": None}
    assert path.read_text(encoding="utf-8").startswith('{\n  "id"')
    assert write_report(tmp_path / "run", Result(id="y", value=1), name="other.json").name == "other.json"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["other.json", "report.json"]


def _count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("torn", [False, True])
def test_sigkill_then_resume_equals_clean_run(tmp_path: Path, torn: bool) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    clean = tmp_path / "clean.jsonl"
    subprocess.run([sys.executable, str(HELPER), str(clean)], check=True, timeout=60, env=env, capture_output=True)
    expected = {r["id"]: r for r in lines_of(clean)}
    assert len(expected) == 40

    out = tmp_path / "killed.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(HELPER), str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while _count_lines(out) < 8 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, f"helper ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done_before = _count_lines(out)
    assert 8 <= done_before < 40
    if torn:
        with out.open("a", encoding="utf-8") as handle:
            handle.write('{"id": "r039", "value": 15')  # a kill mid-write

    resumed = subprocess.run(
        [sys.executable, str(HELPER), str(out)], check=True, timeout=60, env=env, capture_output=True, text=True
    )
    summary = RunSummary.model_validate_json(resumed.stdout.strip().splitlines()[-1])
    assert summary.already_done == done_before and summary.ran == 40 - done_before

    records = lines_of(out)
    assert sorted(r["id"] for r in records) == sorted(expected)  # every id exactly once
    assert {r["id"]: r for r in records} == expected
