"""Every registered agent (the built-in ones and the example plug-in, registered through the entry-point group)
satisfies the AgentSpec contract: each import path resolves to the right kind of object, the builder compiles a
graph whose input/output schemas are the declared ones, every reward follows the one reward signature and
pickles, and every command the agent answers can be built."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evigraph import registry
from evigraph.cli.agent_commands import contract_command
from evigraph.cli.kit import bind_command
from evigraph.errors import ConfigError
from evigraph.evaluation.adapter import NoOptions
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.registry import AgentSpec, LoadedAgent, load_agents, register_agent
from evigraph.rewards import AgentReward, Rewards
from evigraph.trajectory import Evidence, Segment, Trajectory
from tests.plugins import install_plugin_agent

BUILT_IN = {"veri-r1", "stepgap", "rlseek", "seva", "rag-zeval"}


class EmptySearch:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return []

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [[] for _ in queries]


RESOURCES: dict[str, Any] = {"search": EmptySearch(), "nli": None}


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, LoadedAgent]]:
    registry._reset_for_tests()
    for entry in install_plugin_agent(tmp_path):
        monkeypatch.syspath_prepend(entry)
    specs, broken = load_agents()
    assert not broken, broken
    yield {name: spec.load() for name, spec in specs.items()}
    registry._reset_for_tests()


def test_the_built_in_agents_and_the_plugin_are_registered(agents: dict[str, LoadedAgent]) -> None:
    assert set(agents) == BUILT_IN | {"passage-check"}


def test_every_spec_resolves_to_objects_of_the_right_kind(agents: dict[str, LoadedAgent]) -> None:
    for name, agent in agents.items():
        assert agent.config is not None and agent.graph_builder is not None, name
        assert agent.input_schema is not None and agent.output_schema is not None, name
        assert agent.evaluation is not None and agent.rewards, name
        graph = agent.graph_builder(
            ScriptedGenerator(["x"]),
            config=agent.config(),
            sampling=None,
            **{r: RESOURCES[r] for r in agent.spec.resources},
        )
        # The declared schemas are the compiled graph's own: a spec cannot name a type the graph does not take.
        assert graph.builder.input_schema is agent.input_schema, name
        assert graph.builder.output_schema is agent.output_schema, name


def test_every_reward_follows_the_one_signature_and_pickles(agents: dict[str, LoadedAgent]) -> None:
    for name, agent in agents.items():
        for reward_name, reward in agent.rewards.items():
            assert isinstance(reward, AgentReward), (name, reward_name)
            copy = pickle.loads(pickle.dumps(reward))
            assert copy.__name__ == reward.__name__ and copy.scalar == reward.scalar
            # An empty run: every reward scores it (as a failure), never raises.
            empty = Trajectory(agent=name, input={}, segments=[Segment(origin="policy", text="")])
            gold = _any_gold(reward.gold_schema)
            result = reward(empty, gold)
            assert isinstance(result, Rewards) and result.scalar == reward.scalar
            assert result.value == copy(empty, gold).value


def _any_gold(schema: type) -> Any:
    samples = {
        "veri-r1": {"label": "SUPPORTS", "evidence": ["A_sentence_0"]},
        "passage-check": {"supported": True},
        "stepgap": {"golds": ["Paris"]},
        "seva": {"label": "Attributable"},
        "rag-zeval": {"alphas": [0, -1]},
    }
    for sample in samples.values():
        try:
            return schema.model_validate(sample)
        except ValueError:
            continue
    raise AssertionError(f"no sample gold fits {schema}")


def test_every_command_an_agent_answers_can_be_built(agents: dict[str, LoadedAgent]) -> None:
    for name, agent in agents.items():
        for command in agent.spec.commands():
            if command in agent.hooks or command == agent.spec.verb:
                hook = agent.hooks["run" if command == agent.spec.verb else command]
                built = bind_command(hook, agent) if hasattr(hook, "__agent_command__") else hook
            else:
                built = contract_command(agent, command)
            assert callable(built), (name, command)


# -- what a broken spec is told -------------------------------------------------------------------------------


def _not_a_builder(generator: object) -> None:
    """Takes no config: not the framework's call."""


class _HalfAdapter:
    options = NoOptions  # a model class, but the adapter lacks every method


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"config": "json:dumps"}, r"config 'json:dumps' is not a pydantic model class"),
        ({"config": "json:nothing"}, r"config: .*has no attribute 'nothing'"),
        ({"graph_builder": "tests.test_agent_contract:_not_a_builder"}, r"cannot be called as build\(generator"),
        ({"input_schema": "json:dumps"}, "is not a TypedDict or pydantic model class"),
        ({"rewards": {"r": "json:dumps"}}, r"rewards\.r 'json:dumps' is not an AgentReward"),
        ({"evaluation": "tests.test_agent_contract:_HalfAdapter"}, r"is not an EvalAdapter \(missing: check_records"),
        ({"hooks": {"filter": "json:JSONDecodeError.nope"}}, r"hooks\.filter"),
    ],
)
def test_load_names_the_field_that_is_wrong(fields: dict[str, Any], message: str) -> None:
    spec = AgentSpec(name="broken-agent", description="d", **fields)
    with pytest.raises(ConfigError, match=message):
        spec.load()


def test_a_config_field_named_like_a_command_option_is_refused() -> None:
    from pydantic import BaseModel

    class Clashing(BaseModel):
        limit: int = 3  # `evigraph eval` has its own --limit

    registry._reset_for_tests()
    try:
        spec = register_agent(
            AgentSpec(name="clash", description="d", evaluation="passage_check.evaluation:EVALUATION")
        )
        agent = LoadedAgent(
            spec=spec, config=Clashing, graph_builder=lambda *a, **k: None, input_schema=None, output_schema=None,
            rewards={}, evaluation=_HalfAdapter(), hooks={},
        )  # fmt: skip
        with pytest.raises(ConfigError, match="flag --limit"):
            contract_command(agent, "eval")
    finally:
        registry._reset_for_tests()
