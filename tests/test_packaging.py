"""The one-namespace layout: agents/, tools/, ... install as evigraph.* in both install modes.

Each install goes into a fresh virtual environment that borrows the test environment's site-packages for
dependencies (pip, setuptools, pydantic ...) through a plain path line, so nothing is downloaded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("agents", "tools", "graphs", "training", "corpora")
HEAVY = ("torch", "transformers", "vllm", "pyserini", "jnius", "openrlhf")

PROBE = """
import importlib.util, json, sys
import evigraph, evigraph.generators, evigraph.protocol
mods = {name: importlib.import_module("evigraph." + name).__file__ for name in %r}
print(json.dumps({
    "files": mods,
    "bare": [name for name in %r if importlib.util.find_spec(name) is not None],
    "heavy": [name for name in %r if name in sys.modules],
}))
"""


def _probe(python: Path, cwd: Path) -> dict:
    code = PROBE % (MAPPED, MAPPED, HEAVY)
    result = subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _fresh_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # A plain path line: the outer packages become importable, but their .pth hooks (our own editable
    # finder among them) are not run, so only the install under test provides `evigraph`.
    Path(purelib, "_outer_site.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return python


def _pip(python: Path, *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", *args],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )


def test_import_evigraph_is_light(tmp_path: Path) -> None:
    probe = _probe(Path(sys.executable), tmp_path)
    assert probe["heavy"] == []


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Build from a copy: setuptools writes build/ and *.egg-info/ next to the sources it builds.
    source = tmp_path_factory.mktemp("source") / "evigraph"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info", "__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return next(out.glob("evigraph-*.whl"))


def test_wheel_holds_only_the_evigraph_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert all(t == "evigraph" or t.endswith(".dist-info") for t in top_level), top_level
    for folder in MAPPED:
        assert f"evigraph/{folder}/__init__.py" in names
        assert not any(name.startswith(f"{folder}/") for name in names)
    # Every package folder in the source tree made it into the wheel (new agents need no setup change).
    for init in ROOT.glob("*/**/__init__.py"):
        relative = init.relative_to(ROOT)
        if relative.parts[0] in MAPPED:
            assert "evigraph/" + relative.as_posix() in names, relative
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "evigraph = evigraph.cli.app:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_regular_install(tmp_path: Path, wheel: Path) -> None:
    python = _fresh_venv(tmp_path / "venv")
    _pip(python, str(wheel))
    probe = _probe(python, tmp_path)
    assert probe["bare"] == [] and probe["heavy"] == []
    for folder in MAPPED:
        assert f"site-packages/evigraph/{folder}/__init__.py" in probe["files"][folder]


def test_editable_install(tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path / "venv")
    _pip(python, "-e", str(ROOT))
    probe = _probe(python, tmp_path)
    assert probe["bare"] == [] and probe["heavy"] == []
    for folder in MAPPED:
        assert probe["files"][folder] == str(ROOT / folder / "__init__.py")
    cli = subprocess.run([str(tmp_path / "venv" / "bin" / "evigraph"), "--help"], capture_output=True, text=True)
    assert cli.returncode == 0 and "generate" in cli.stdout
