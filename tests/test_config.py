"""Settings precedence (flags > environment > file > defaults) and errors naming the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from evigraph.config import load_settings
from evigraph.errors import ConfigError


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "evigraph.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_precedence_flags_over_env_over_file_over_defaults(tmp_path: Path) -> None:
    config = _file(tmp_path, '[generator]\nmodel = "hf:/file"\ntemperature = 0.3\nseed = 7\n')
    env = {"EVIGRAPH_MODEL": "hf:/env", "EVIGRAPH_GENERATOR__TEMPERATURE": "0.5"}
    settings = load_settings({"generator.temperature": 0.9}, env=env, config_path=config)
    assert settings.generator.model == "hf:/env"  # env beats the file
    assert settings.generator.temperature == 0.9  # the flag beats env
    assert settings.generator.seed == 7  # only the file set it
    assert settings.generator.max_new_tokens == 256  # default
    assert load_settings({"generator.model": None}, env=env, config_path=config).generator.model == "hf:/env"


def test_config_file_is_found_through_the_environment(tmp_path: Path) -> None:
    config = _file(tmp_path, "log_level = 'INFO'\n")
    assert load_settings(env={"EVIGRAPH_CONFIG": str(config)}).log_level == "INFO"
    with pytest.raises(ConfigError, match=r"EVIGRAPH_CONFIG: config file .* does not exist"):
        load_settings(env={"EVIGRAPH_CONFIG": str(tmp_path / "missing.toml")})


@pytest.mark.parametrize(
    ("overrides", "env", "file_text", "expected"),
    [
        ({"generator.temperature": -1}, {}, "", r"--generator\.temperature: generator\.temperature: Input should be"),
        ({}, {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "many"}, "", r"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS: .*'many'"),
        ({}, {}, "[generator]\nseed = 'x'\n", r"evigraph\.toml:generator\.seed: .*'x'"),
        (
            {},
            {},
            "[generator]\ntemprature = 1\n",
            r"unknown setting 'generator\.temprature'; accepted: generator\.model",
        ),
        ({}, {}, "not = [toml", r"not valid TOML"),
    ],
)
def test_errors_name_the_offending_source(
    tmp_path: Path, overrides: dict, env: dict, file_text: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_settings(overrides, env=env, config_path=_file(tmp_path, file_text))


def test_vllm_engine_table_reaches_the_settings(tmp_path: Path) -> None:
    config = _file(tmp_path, '[generator]\nmodel = "vllm:/models/q"\n[generator.vllm_engine]\nmax_model_len = 4096\n')
    assert load_settings(env={}, config_path=config).generator.vllm_engine == {"max_model_len": 4096}
