"""Session fixtures of the report tests: one eval run per agent (made once, in parallel), its report, and one
headless Chromium for every page (installed with apt-get where missing and possible, else those tests skip)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evigraph.cli.app import run
from tests.report.browser import Browser, find_chromium
from tests.report.runs import AGENTS, fake_retriever, start_eval


@dataclass(frozen=True)
class Report:
    """An agent's eval run directory and the report written from it."""

    agent: str
    run: Path
    html: Path


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    """Agent → its run and report (``--page-size 2``, so paging shows with a few records)."""
    tmp = tmp_path_factory.mktemp("report-runs")
    with fake_retriever() as url:
        started = [start_eval(agent, tmp, url) for agent in AGENTS]
        runs = {started_run.agent: started_run.wait() for started_run in started}
    made = {}
    for agent, run_dir in runs.items():
        html = tmp / f"{agent}.html"
        assert run(["report", str(run_dir), "--html", str(html), "--page-size", "2"]) == 0
        made[agent] = Report(agent, run_dir, html)
    return made


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's path; installed by apt-get when missing and we are root, else the test skips saying why."""
    path, why = find_chromium(install=True)
    if path is None:
        pytest.skip(f"headless Chromium is not available: {why}")
    return path


@pytest.fixture(scope="session")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """One headless Chromium for every page of the session."""
    pytest.importorskip("websockets", reason="the DevTools driver needs the websockets package")
    driver = Browser(chromium, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.close()
