"""Processes that load torch, start the JVM and search from several threads end with their own exit status, and
signals stop them promptly: no crash at exit, no JVM crash file in the working directory (issue 9 §2).

The JVM used to take over SIGINT/SIGTERM: a Ctrl-C or a ``timeout`` made Java exit the process while torch and
Python threads still ran native code, which hung it or crashed it ("VM state: at safepoint (shutting down)")
with an ``hs_err_pid*.log`` in the working directory. ``_exit_repro.py`` is the process; each runs fresh.
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.markers import requires_pyserini

pytestmark = [pytest.mark.java, requires_pyserini]

REPRO = Path(__file__).with_name("_exit_repro.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A private cache (crash files would land in it) with the demo corpus built once."""
    cache = tmp_path_factory.mktemp("cache")
    environment = {**os.environ, "EVIGRAPH_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    build = "from evigraph.corpora.registry import resolve_corpus; resolve_corpus('demo')"
    subprocess.run([sys.executable, "-c", build], env=environment, check=True, capture_output=True, timeout=300)
    return environment


def _default_sigint() -> None:
    """In the child, before Python starts: SIGINT back to its default action. A suite started in the background
    (``nohup ... &``) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler, so the
    signal would do nothing and the test would measure how pytest was started, not evigraph."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _crash_files(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.rglob("hs_err_pid*.log")]


def test_twenty_processes_exit_cleanly(env: dict[str, str], tmp_path: Path) -> None:
    def one(_: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(REPRO), "exit"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180
        )

    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two at a time: one per core
        runs = list(pool.map(one, range(20)))
    statuses = [r.returncode for r in runs]
    assert statuses == [0] * 20, [(r.returncode, r.stderr[-400:]) for r in runs if r.returncode]
    assert all("done 4" in r.stdout for r in runs)
    assert _crash_files(tmp_path, Path(env["EVIGRAPH_CACHE_DIR"])) == []


@pytest.mark.parametrize(("sig", "deadline_s"), [(signal.SIGINT, 30.0), (signal.SIGTERM, 10.0)])
def test_a_signal_mid_generation_stops_the_process_promptly(
    env: dict[str, str], tmp_path: Path, tiny_llama_dir: Path, sig: signal.Signals, deadline_s: float
) -> None:
    for _ in range(2):
        process = subprocess.Popen(
            [sys.executable, str(REPRO), "signal", str(tiny_llama_dir)],
            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=_default_sigint,
        )  # fmt: skip
        assert process.stdout is not None
        while "ready" not in (line := process.stdout.readline()):
            assert line, "the process ended before it was ready"
        time.sleep(1.0)  # the four runs are generating now
        sent = time.monotonic()
        process.send_signal(sig)
        try:
            status = process.wait(deadline_s)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"{sig.name} did not stop the process within {deadline_s} s")
        output = process.stdout.read()
        # Python's own handling: KeyboardInterrupt for SIGINT, the default action for SIGTERM; never the JVM's
        # exit code (130/143) nor an abort ("terminate called without an active exception").
        assert status == -sig, (status, output[-600:])
        assert "terminate called" not in output and "done 4" not in output
        assert time.monotonic() - sent < deadline_s
    assert _crash_files(tmp_path, Path(env["EVIGRAPH_CACHE_DIR"])) == []
