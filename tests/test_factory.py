"""Model specs: one string picks the backend; bad specs say what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.config import GeneratorConfig
from evigraph.errors import ConfigError
from evigraph.generators.factory import ModelSpec, make_generator, parse_model_spec, sampling_params


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("smollm2", ModelSpec(kind="embedded")),
        ("hf:/models/qwen", ModelSpec(kind="hf", target="/models/qwen")),
        ("gguf:/m/x.gguf", ModelSpec(kind="gguf", target="/m/x.gguf")),
        ("vllm:/models/qwen", ModelSpec(kind="vllm", target="/models/qwen")),
        (
            "openai:qwen@http://127.0.0.1:8000/v1",
            ModelSpec(kind="openai", target="http://127.0.0.1:8000/v1", model="qwen"),
        ),
        ("langchain:my_pkg.models:chat", ModelSpec(kind="langchain", target="my_pkg.models:chat")),
    ],
)
def test_specs_parse(spec: str, expected: ModelSpec) -> None:
    assert parse_model_spec(spec) == expected


def test_an_existing_directory_is_a_hf_model(tmp_path: Path) -> None:
    assert parse_model_spec(str(tmp_path)) == ModelSpec(kind="hf", target=str(tmp_path))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:qwen", "expected openai:MODEL@"),  # no base URL
        ("openai:qwen@localhost:8000", "expected openai:MODEL@"),  # URL without a scheme
        ("langchain:module_only", "expected langchain:module:attr"),
        ("/no/such/dir", "unknown generator"),
    ],
)
def test_bad_specs_name_the_accepted_forms(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_model_spec(spec)


def test_missing_model_paths_fail_before_loading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"GGUF file .* does not exist"):
        make_generator(GeneratorConfig(model=f"gguf:{tmp_path / 'none.gguf'}"))
    with pytest.raises(ConfigError, match=r"model directory .* does not exist"):
        make_generator(GeneratorConfig(model=f"hf:{tmp_path / 'none'}"))


def test_sampling_params_follow_the_config() -> None:
    params = sampling_params(GeneratorConfig(max_new_tokens=12, temperature=0.5, seed=3), stop=("</answer>",))
    assert (params.max_new_tokens, params.temperature, params.seed, params.stop) == (12, 0.5, 3, ("</answer>",))
