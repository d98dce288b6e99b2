"""Agents plug in through the `evigraph.agents` entry-point group or `register_agent`."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from evigraph import registry
from evigraph.errors import ConfigError
from evigraph.registry import AgentSpec, get_agent, load_agents, register_agent


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    registry._reset_for_tests()
    yield
    registry._reset_for_tests()


def _install_fake_distribution(site: Path, entry_points: str, module_source: str) -> None:
    """A third-party package as pip would lay it out: a module plus a dist-info with entry points."""
    (site / "thirdparty_checker").mkdir(parents=True)
    (site / "thirdparty_checker" / "__init__.py").write_text(textwrap.dedent(module_source), encoding="utf-8")
    dist = site / "thirdparty_checker-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-checker\nVersion: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(f"[evigraph.agents]\n{entry_points}\n", encoding="utf-8")


def test_third_party_agent_registers_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install_fake_distribution(
        tmp_path,
        "my-checker = thirdparty_checker:SPEC\nbroken = thirdparty_checker:MISSING\n",
        """
        from evigraph.registry import AgentSpec
        SPEC = AgentSpec(name="my-checker", description="checks things", verb="check",
                         hooks={"score": "thirdparty_checker:score", "run": "thirdparty_checker:score"})
        def score(pred: str) -> None:
            print("scored", pred)
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    agents, broken = load_agents()
    assert agents["my-checker"].verb == "check"
    assert "broken" in broken and "MISSING" in broken["broken"].error  # reported, not raised
    assert callable(get_agent("my-checker").hook("score"))
    with pytest.raises(ConfigError, match="failed to load"):
        get_agent("broken")


def test_register_agent_and_lookup_errors() -> None:
    spec = register_agent(AgentSpec(name="demo", description="d", hooks={"reward": "json:dumps"}))
    assert get_agent("demo") is spec
    assert get_agent("demo").hook("reward").__name__ == "dumps"
    with pytest.raises(ConfigError, match=r"has no 'score' hook \(it provides: reward\)"):
        spec.hook("score")
    with pytest.raises(ConfigError, match="already registered"):
        register_agent(AgentSpec(name="demo", description="other"))
    registered = r"\(registered: demo, rag-zeval, rlseek, seva, stepgap, veri-r1\)"
    with pytest.raises(ConfigError, match=r"unknown agent 'nope' " + registered):
        get_agent("nope")
    bad_path = register_agent(AgentSpec(name="bad", description="d", hooks={"score": "json:nothing_here"}))
    with pytest.raises(ConfigError, match="has no attribute 'nothing_here'"):
        bad_path.hook("score")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "Veri_R1"}, "lowercase words"),
        ({"name": "x", "verb": "Judge", "hooks": {"run": "a:b"}}, "a verb is a lowercase word"),
        ({"name": "x", "verb": "eval", "hooks": {"run": "a:b"}}, "no built-in command"),
        ({"name": "x", "verb": "judge"}, "needs a 'run' hook"),
        ({"name": "x", "hooks": {"Train": "a:b"}}, "a lowercase command name"),
        ({"name": "x", "hooks": {"info": "a:b"}}, "not a built-in command"),
        ({"name": "x", "graph_builder": "not a path"}, "package.module:attribute"),
    ],
)
def test_spec_validation(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AgentSpec.model_validate({"description": "d", **fields})
