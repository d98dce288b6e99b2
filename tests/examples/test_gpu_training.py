"""examples/gpu_training.md stays runnable: every ``evigraph train`` line of it dry-runs on the papers' released
files (the shared copies; the OpenRLHF lines' flags then parse with OpenRLHF 0.11.2's own argparse), and every
other ``evigraph`` line names a command and flags that exist."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.markers import shared_data

DOC = Path(__file__).resolve().parents[2] / "examples" / "gpu_training.md"


def commands() -> list[list[str]]:
    """The ``evigraph`` command lines of the doc's bash blocks, continuation lines joined, comments dropped."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["evigraph"]:
                found.append(words)
    return found


TRAIN = [c for c in commands() if c[1] == "train"]
OTHER = [c for c in commands() if c[1] != "train"]


def test_the_doc_shows_both_engines() -> None:
    assert len(TRAIN) >= 6 and {"--engine" in c for c in TRAIN} == {True, False}
    assert {c[2] for c in TRAIN} >= {"veri-r1", "rlseek", "stepgap-generator", "seva"}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("RAY_HEAD_IP", None)
    return subprocess.run(
        [sys.executable, "-m", "evigraph.cli.app", *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )


def _local(words: list[str], out: Path) -> list[str]:
    """The doc's placeholders made local: shared data for ``/data``, the demo corpus, a temporary run folder."""
    local = []
    for i, word in enumerate(words):
        if word.startswith("/data/"):
            name, _, rest = word.removeprefix("/data/").partition("/")
            word = str(shared_data(name) / rest)
        elif words[i - 1] == "--corpus":
            word = "demo"
        elif words[i - 1] == "--out":
            word = str(out)
        local.append(word)
    return local if "--dry-run" in local else [*local, "--dry-run"]


@pytest.mark.parametrize("words", TRAIN, ids=lambda w: f"{w[2]}-{'trl' if '--engine' in w else 'openrlhf'}")
def test_each_training_line_dry_runs(words: list[str], tmp_path: Path, monkeypatch: Any) -> None:
    local = _local(words, tmp_path / "run")
    data = Path(local[local.index("--data") + 1])
    if not data.exists():
        pytest.skip(f"shared data {data} is not here")
    done = _run(*local[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if "--engine" in local:
        config = json.loads(done.stdout[done.stdout.index("{") :])["main"]
        assert config["max_steps"] == int(local[local.index("--max-steps") + 1])
        for key, value in (w.split("=", 1) for w in local if w.startswith("trl.args.")):
            assert str(config[key.removeprefix("trl.args.")]) == value
        return
    from tests.training.openrlhf_real import parse_train_ppo_ray

    launch = shlex.split(done.stdout.strip().splitlines()[-1])
    args = parse_train_ppo_ray(monkeypatch, launch[launch.index("--") + 1 :])
    for override in (w for w in local if w.startswith("openrlhf.")):
        key, value = override.removeprefix("openrlhf.").split("=", 1)
        group, field = key.split(".", 1)
        assert str(getattr(getattr(args, group), field)) == value


@pytest.mark.parametrize("words", OTHER, ids=lambda w: " ".join(w[1:3]))
def test_every_other_line_names_a_real_command_and_flags(words: list[str], tmp_path: Path) -> None:
    path = [w for w in words[1:] if not w.startswith("-")][:3]
    shown = _run(*path, "--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    for flag in (w.split("=")[0] for w in words if w.startswith("--")):
        assert flag in shown.stdout, f"{' '.join(words[:3])}: no {flag} in its --help"
