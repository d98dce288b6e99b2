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
    "name",
    [
        "EVIGRAPH_API_KEY",
        "EVIGRAPH_SERVE_TOKEN",
        "EVIGRAPH_SEARCH",
        "EVIGRAPH_RETRIEVAL",
        "EVIGRAPH_NLI",
        "EVIGRAPH_CONFIG_DIR",
    ],
)
def test_only_settings_variables_are_read_as_settings(name: str) -> None:
    """A shell exporting the API key (read by the OpenAI-compatible client) or the LangGraph server's search must
    not break every command; an unknown ``EVIGRAPH_*`` name is still refused, naming the variable."""
    env = {name: "x", "EVIGRAPH_MODEL": "hf:/env"}
    if name == "EVIGRAPH_CONFIG_DIR":
        with pytest.raises(ConfigError, match="EVIGRAPH_CONFIG_DIR"):
            load_settings(env=env)
    else:
        assert load_settings(env=env).generator.model == "hf:/env"


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


# -- agent sections and settings an agent takes from the generator --------------------------------------------


def _veri_r1(overrides: dict | None = None, env: dict | None = None, file_text: str = "", tmp_path: Path | None = None):
    from evigraph.agents.veri_r1.schemas import VeriR1Config
    from evigraph.config import agent_config

    assert tmp_path is not None
    settings = load_settings(overrides or {}, env=env or {}, config_path=_file(tmp_path, file_text))
    return agent_config(settings, "veri-r1", VeriR1Config)


@pytest.mark.parametrize(
    ("overrides", "env", "file_text", "turn", "offline"),
    [
        ({}, {}, "", 512, 1024),  # the agent's defaults (spec §5), not the generator's 256
        ({}, {}, "[generator]\nmax_new_tokens = 100\n", 100, 100),  # the file's generator key reaches the agent
        ({}, {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "80"}, "[generator]\nmax_new_tokens = 100\n", 80, 80),  # env > file
        ({"generator.max_new_tokens": 64}, {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "80"}, "", 64, 64),  # flag > env
        # Same source: the agent's own key wins, the other field still takes the generator's.
        ({}, {}, "[generator]\nmax_new_tokens = 100\n[agents.veri-r1]\nmax_new_tokens = 300\n", 300, 100),
        ({}, {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "80"}, "[agents.veri-r1]\nmax_new_tokens = 300\n", 80, 80),
        ({}, {"EVIGRAPH_AGENTS__VERI_R1__MAX_NEW_TOKENS": "90"}, "[generator]\nmax_new_tokens = 100\n", 90, 100),
    ],
)
def test_the_per_turn_cap_follows_the_documented_precedence(
    tmp_path: Path, overrides: dict, env: dict, file_text: str, turn: int, offline: int
) -> None:
    config = _veri_r1(overrides, env, file_text, tmp_path)
    assert (config.max_new_tokens, config.offline_max_new_tokens) == (turn, offline)


@pytest.mark.parametrize(
    ("overrides", "env", "file_text", "expected"),
    [
        ({}, {}, "", 3),
        ({}, {}, "[agents.veri-r1]\nmax_searches = 2\n", 2),
        ({}, {"EVIGRAPH_AGENTS__VERI_R1__MAX_SEARCHES": "1"}, "[agents.veri-r1]\nmax_searches = 2\n", 1),
        ({"agents.veri-r1.max_searches": 4}, {"EVIGRAPH_AGENTS__VERI_R1__MAX_SEARCHES": "1"}, "", 4),
        ({}, {}, "[agents.veri_r1]\nmax_searches = 5\n", 5),  # the env spelling of the name works in files too
    ],
)
def test_an_agent_setting_follows_flags_env_file_defaults(
    tmp_path: Path, overrides: dict, env: dict, file_text: str, expected: int
) -> None:
    assert _veri_r1(overrides, env, file_text, tmp_path).max_searches == expected


@pytest.mark.parametrize(
    ("overrides", "env", "file_text", "expected"),
    [
        ({}, {}, "[agents.veri-r1]\nmax_searches = -1\n", r"evigraph\.toml:agents\.veri-r1\.max_searches: .*-1"),
        ({}, {"EVIGRAPH_AGENTS__VERI_R1__TOP_K": "many"}, "", r"EVIGRAPH_AGENTS__VERI_R1__TOP_K: .*'many'"),
        ({"agents.veri-r1.top_k": 0}, {}, "", r"--top-k: agents\.veri-r1\.top_k"),
        (
            {},
            {},
            "[agents.veri-r1]\nmax_serches = 2\n",
            r"unknown setting 'agents\.veri-r1\.max_serches'; accepted: agents\.veri-r1\.offline, .*max_searches",
        ),
        (
            {},
            {},
            "[agents.veri-r1.format]\nforbid_free = false\n",
            r"unknown setting 'agents\.veri-r1\.format\.forbid_free'; accepted: .*format\.forbid_free_text",
        ),
        ({}, {"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS": "0"}, "", r"EVIGRAPH_GENERATOR__MAX_NEW_TOKENS: .*"),
    ],
)
def test_agent_setting_errors_name_their_source(
    tmp_path: Path, overrides: dict, env: dict, file_text: str, expected: str
) -> None:
    with pytest.raises(ConfigError, match=expected):
        _veri_r1(overrides, env, file_text, tmp_path)
