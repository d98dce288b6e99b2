"""The agent registry: what a verification method plugs into.

An agent is declared by an :class:`AgentSpec`: its name, what it does, and *import paths*
(``"package.module:attribute"``) of the pieces the framework drives -- its config model, graph builder, graph
input/output schemas, rewards, evaluation adapter and any extra CLI hooks. Paths, not objects, keep
``evigraph info`` and ``evigraph --help`` light: nothing heavy is imported until a command needs it.
:meth:`AgentSpec.load` resolves every path and checks what it finds (a config *model*, a builder that accepts
the framework's call, :class:`~evigraph.rewards.AgentReward` objects, an
:class:`~evigraph.evaluation.adapter.EvalAdapter`), so a broken plug-in fails with a message naming the field.

Built-in agents and third-party packages register the same way, through the entry-point group
``evigraph.agents`` (each entry point names an ``AgentSpec`` object)::

    [project.entry-points."evigraph.agents"]
    my-checker = "my_package.agent:SPEC"

:func:`register_agent` adds one at run time (tests, notebooks). A plug-in that fails to load is reported by
:func:`load_agents` and ``evigraph info`` instead of breaking every other agent. ``docs/adding-an-agent.md``
walks through writing one.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from typing_extensions import is_typeddict

from evigraph.errors import ConfigError
from evigraph.imports import resolve

__all__ = (
    "BUILTIN_COMMANDS",
    "ENTRY_POINT_GROUP",
    "HOOKS",
    "AgentSpec",
    "BrokenAgent",
    "LoadedAgent",
    "Resource",
    "get_agent",
    "load_agents",
    "register_agent",
)

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "evigraph.agents"

HOOKS: tuple[str, ...] = ("run", "eval", "score", "reward")
"""Hooks with a fixed meaning. ``run`` backs the agent's own verb (``verify``, ``check``, ...); ``eval``,
``score`` and ``reward`` replace the framework's commands built from the spec (rarely needed). Any other
lowercase name is an agent command of its own, run as ``evigraph NAME AGENT`` (Veri-R1's ``filter``,
RLSeek's ``prepare``); agents may share such a name."""

BUILTIN_COMMANDS: frozenset[str] = frozenset(
    {
        "info",
        "setup",
        "generate",
        "corpus",
        "graph",
        "report",
        "eval",
        "score",
        "reward",
        "train",
        "train-sft",
        "export-sft",
        "serve",
        "help",
    }
)
"""Top-level command names no agent verb or command of its own may take."""

Resource = Literal["search", "nli"]
"""Tools the framework opens for an agent from command-line flags and hands to its graph builder by name
(``search``: ``--corpus NAME|DIR`` or ``--retriever-url URL``; ``nli``: ``--nli CHECKPOINT_DIR``)."""

_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class AgentSpec(BaseModel):
    """Everything the framework needs to know about one agent, as import paths (checked by :meth:`load`)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Registry key and CLI argument, lowercase with dashes (``veri-r1``)."""
    description: str
    verb: str | None = None
    """The top-level command that runs this agent once (``evigraph verify``); needs a ``run`` hook. Any
    lowercase word that is not a built-in command; the first agent (by name) to claim a verb gets it."""
    config: str | None = None
    """``module:Model``: the agent's config, a pydantic model. Its scalar fields become flags of the agent's
    commands and keys of its ``[agents.NAME]`` config section."""
    graph_builder: str | None = None
    """``module:function`` compiling the graph: called as ``build(generator, config=..., sampling=...,
    **resources)``."""
    input_schema: str | None = None
    """``module:Type``: what the compiled graph's ``ainvoke`` takes."""
    output_schema: str | None = None
    """``module:Type``: what the compiled graph's ``ainvoke`` returns."""
    rewards: dict[str, str] = Field(default_factory=dict)
    """Reward name → ``module:object``, each an :class:`~evigraph.rewards.AgentReward`; the first is the
    default of ``evigraph reward`` and the trainer."""
    evaluation: str | None = None
    """``module:object``: the :class:`~evigraph.evaluation.adapter.EvalAdapter` behind ``eval`` and ``score``."""
    resources: tuple[Resource, ...] = ()
    """Tools the graph builder takes by keyword (see :data:`Resource`)."""
    hooks: dict[str, str] = Field(default_factory=dict)
    """CLI hook name (one of ``HOOKS``, or a command of the agent's own) → ``module:function``, a typer command."""
    command_help: dict[str, str] = Field(default_factory=dict)
    """Command of the agent's own (a key of ``hooks`` outside ``HOOKS``) → one line saying what it does, shown
    by ``evigraph --help``. Declared here, not read from the command's docstring, so that listing the commands
    imports no agent's command module."""
    step_readers: dict[str, str] = Field(default_factory=dict)
    """Training: checker agent name → ``module:function`` reading one of *this* agent's trajectories as that
    checker's trace (``None`` when the run has no steps), so the checker's process reward can score this agent's
    rollouts (a training config's ``mix`` term ``adapter: THIS->CHECKER``)."""
    checker: str | None = None
    """Training: ``module:factory`` of this agent as a frozen checker of other agents' runs, called as
    ``factory(judge, nli=...)`` and returning a :class:`~evigraph.training.checker_cache.FrozenChecker`."""
    distill: str | None = None
    """``module:function`` turning one stored trajectory into SFT examples for a student of this agent
    (``evigraph export-sft AGENT --student``): a list of ``{"id", "messages"}`` dicts."""
    report_view: str | None = None
    """``module:function`` turning one line of the agent's ``predictions.jsonl`` (a dict, its ``gold`` included) into
    a :class:`~evigraph.report.view.RecordView` for ``evigraph report`` (default: the generic view)."""
    verification: str | None = None
    """Embedding: ``module:function`` mapping the verifier graph's result (a dict with ``output`` and
    ``trajectory``) to a :class:`~evigraph.verification.Verification` (:mod:`evigraph.embed`)."""
    verifier_builder: str | None = None
    """Embedding: ``module:function`` compiling the graph a host embeds, when it is not ``graph_builder`` (StepGap
    embeds its checker over a host's steps, not its own rollouts); called like ``graph_builder``."""
    verifier_input_schema: str | None = None
    """Embedding: the input schema of ``verifier_builder``'s graph (default: ``input_schema``)."""
    conversation_inputs: str | None = None
    """Embedding: ``module:function`` reading a host agent's finished turn (a
    :class:`~evigraph.conversation.Conversation`) as this agent's input fields (``VerificationMiddleware``)."""
    tool_name: str | None = None
    """Embedding: the name of the agent as a LangChain tool a host's model calls (``verify_claim``); lowercase
    words joined by underscores (default: ``verify_`` and the agent's name with underscores)."""
    tool_description: str | None = None
    """Embedding: what the tool tells a host's model it does (default: ``description``)."""
    tool_inputs: tuple[str, ...] = ()
    """Embedding: the input fields the tool's model fills (default: every field of the verifier's input schema but
    ``id`` and ``gold``). Leave out what a model must not choose, such as results the verifier would keep
    unchecked."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"agent names are lowercase words joined by dashes, got {value!r}")
        return value

    @field_validator("verb")
    @classmethod
    def _check_verb(cls, value: str | None) -> str | None:
        if value is not None and (not _NAME.match(value) or value in BUILTIN_COMMANDS):
            reserved = ", ".join(sorted(BUILTIN_COMMANDS))
            raise ValueError(f"a verb is a lowercase word with dashes and no built-in command ({reserved}): {value!r}")
        return value

    @field_validator("tool_name")
    @classmethod
    def _check_tool_name(cls, value: str | None) -> str | None:
        if value is not None and not _TOOL_NAME.match(value):
            raise ValueError(f"a tool name is lowercase words joined by underscores, got {value!r}")
        return value

    @field_validator("hooks")
    @classmethod
    def _check_hooks(cls, value: dict[str, str]) -> dict[str, str]:
        bad = sorted(h for h in value if h not in HOOKS and (not _NAME.match(h) or h in BUILTIN_COMMANDS))
        if bad:
            raise ValueError(
                f"hook name(s) {bad}: use {', '.join(HOOKS)} or a lowercase command name of your own that is not "
                f"a built-in command ({', '.join(sorted(BUILTIN_COMMANDS))})"
            )
        return value

    @field_validator(
        "config",
        "graph_builder",
        "input_schema",
        "output_schema",
        "evaluation",
        "checker",
        "distill",
        "report_view",
        "verification",
        "verifier_builder",
        "verifier_input_schema",
        "conversation_inputs",
    )
    @classmethod
    def _check_path(cls, value: str | None) -> str | None:
        if value is not None and not _IMPORT_PATH.match(value):
            raise ValueError(f"expected 'package.module:attribute', got {value!r}")
        return value

    @field_validator("rewards", "hooks", "step_readers")
    @classmethod
    def _check_paths(cls, value: dict[str, str]) -> dict[str, str]:
        for key, path in value.items():
            if not _IMPORT_PATH.match(path):
                raise ValueError(f"{key}: expected 'package.module:attribute', got {path!r}")
        return value

    @model_validator(mode="after")
    def _check_verb_has_run(self) -> AgentSpec:
        if self.verb is not None and "run" not in self.hooks:
            raise ValueError(f"verb {self.verb!r} needs a 'run' hook (the command it runs)")
        return self

    @model_validator(mode="after")
    def _check_command_help(self) -> AgentSpec:
        own = set(self.hooks) - set(HOOKS)
        unknown = sorted(set(self.command_help) - own)
        if unknown:
            raise ValueError(f"command_help {unknown}: only commands of the agent's own in hooks ({sorted(own)})")
        bad = sorted(name for name, line in self.command_help.items() if not line.strip() or "\n" in line)
        if bad:
            raise ValueError(f"command_help {bad}: one non-empty line each")
        return self

    def commands(self) -> list[str]:
        """The ``evigraph`` commands this agent answers (hooks and what its contract makes available)."""
        provided = set(self.hooks) - {"run"}
        if self.evaluation:
            provided |= {"score"} | ({"eval"} if self.graph_builder else set())
        if self.rewards:
            provided.add("reward")
        return sorted(provided) + ([self.verb] if self.verb else [])

    def hook(self, name: str) -> Callable[..., Any]:
        """The callable behind CLI hook ``name``.

        Raises:
            ConfigError: the agent does not provide that hook.
        """
        if name not in self.hooks:
            provided = ", ".join(sorted(self.hooks)) or "none"
            raise ConfigError(f"agent {self.name!r} has no {name!r} hook (it provides: {provided})")
        return resolve(self.hooks[name])

    def load(self) -> LoadedAgent:
        """Resolve every import path and check the kind of each object.

        Raises:
            ConfigError: a path that does not import, or an object of the wrong kind; the message names the
                agent, the field and the path.
        """
        return _load(self)


@dataclass(frozen=True)
class LoadedAgent:
    """An :class:`AgentSpec` with its objects resolved and checked."""

    spec: AgentSpec
    config: type[BaseModel] | None
    graph_builder: Callable[..., Any] | None
    input_schema: type | None
    output_schema: type | None
    rewards: Mapping[str, Any]
    """Name → :class:`~evigraph.rewards.AgentReward`."""
    evaluation: Any | None
    """The :class:`~evigraph.evaluation.adapter.EvalAdapter`."""
    hooks: Mapping[str, Callable[..., Any]]
    step_readers: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Checker agent name → reader of this agent's trajectories as that checker's traces."""
    checker: Callable[..., Any] | None = None
    distill: Callable[..., Any] | None = None
    report_view: Callable[..., Any] | None = None
    """Turns one prediction line into a :class:`~evigraph.report.view.RecordView` (``evigraph report``)."""
    verification: Callable[..., Any] | None = None
    verifier_builder: Callable[..., Any] | None = None
    verifier_input_schema: type | None = None
    conversation_inputs: Callable[..., Any] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def reward(self, name: str | None = None) -> Any:
        """The reward called ``name`` (default: the first declared).

        Raises:
            ConfigError: no such reward (the message lists them).
        """
        if not self.rewards:
            raise ConfigError(f"agent {self.name!r} declares no reward")
        if name is None:
            return next(iter(self.rewards.values()))
        if name not in self.rewards:
            raise ConfigError(f"agent {self.name!r} has no reward {name!r}; it has: {', '.join(self.rewards)}")
        return self.rewards[name]

    def require(self, part: str) -> Any:
        """``graph_builder``, ``evaluation``, ``config``, ``checker`` or ``distill``, or a ConfigError saying the
        agent lacks it."""
        value = getattr(self, part)
        if value is None:
            raise ConfigError(f"agent {self.name!r} declares no {part} (AgentSpec.{part})")
        return value


def _load(spec: AgentSpec) -> LoadedAgent:
    from evigraph.evaluation.adapter import EvalAdapter
    from evigraph.rewards import AgentReward

    def get(field_name: str, path: str | None, check: Callable[[Any], str | None]) -> Any:
        if path is None:
            return None
        try:
            obj = resolve(path)
        except ConfigError as error:
            raise ConfigError(f"agent {spec.name!r}: {field_name}: {error}") from None
        problem = check(obj)
        if problem:
            raise ConfigError(f"agent {spec.name!r}: {field_name} {path!r} {problem}")
        return obj

    def is_model(obj: Any) -> str | None:
        return None if isinstance(obj, type) and issubclass(obj, BaseModel) else "is not a pydantic model class"

    def is_schema(obj: Any) -> str | None:
        ok = isinstance(obj, type) and (issubclass(obj, BaseModel) or is_typeddict(obj))
        return None if ok else "is not a TypedDict or pydantic model class"

    def is_builder(obj: Any) -> str | None:
        if not callable(obj):
            return "is not callable"
        keywords = {"config": None, "sampling": None, **{name: None for name in spec.resources}}
        try:
            inspect.signature(obj).bind(None, **keywords)
        except TypeError as error:
            wanted = ", ".join(["generator", *(f"{k}=" for k in keywords)])
            return f"cannot be called as build({wanted}): {error}"
        return None

    def is_reward(obj: Any) -> str | None:
        if not isinstance(obj, AgentReward) or not callable(obj):
            return "is not an AgentReward (a callable with __name__, scalar and gold_schema)"
        if not isinstance(obj.scalar, str) or is_model(obj.gold_schema):
            return "needs a str scalar and a pydantic gold_schema"
        return None

    def is_adapter(obj: Any) -> str | None:
        if not isinstance(obj, EvalAdapter):
            missing = [m for m in _protocol_members(EvalAdapter) if not hasattr(obj, m)]
            return f"is not an EvalAdapter (missing: {', '.join(missing)})"
        if is_model(obj.options):
            return "has options that are not a pydantic model class"
        return None

    def is_callable(obj: Any) -> str | None:
        return None if callable(obj) else "is not callable"

    return LoadedAgent(
        spec=spec,
        config=get("config", spec.config, is_model),
        graph_builder=get("graph_builder", spec.graph_builder, is_builder),
        input_schema=get("input_schema", spec.input_schema, is_schema),
        output_schema=get("output_schema", spec.output_schema, is_schema),
        rewards={name: get(f"rewards.{name}", path, is_reward) for name, path in spec.rewards.items()},
        evaluation=get("evaluation", spec.evaluation, is_adapter),
        hooks={name: get(f"hooks.{name}", path, is_callable) for name, path in spec.hooks.items()},
        step_readers={name: get(f"step_readers.{name}", path, is_callable) for name, path in spec.step_readers.items()},
        checker=get("checker", spec.checker, is_callable),
        distill=get("distill", spec.distill, is_callable),
        report_view=get("report_view", spec.report_view, is_callable),
        verification=get("verification", spec.verification, is_callable),
        verifier_builder=get("verifier_builder", spec.verifier_builder, is_callable),
        verifier_input_schema=get("verifier_input_schema", spec.verifier_input_schema, is_schema),
        conversation_inputs=get("conversation_inputs", spec.conversation_inputs, is_callable),
    )


def _protocol_members(protocol: type) -> list[str]:
    return sorted(
        name
        for klass in protocol.__mro__[:-1]
        for name in {*vars(klass), *getattr(klass, "__annotations__", {})}
        if not name.startswith("_")
    )


@dataclass(frozen=True)
class BrokenAgent:
    """An entry point that failed to load, kept so ``evigraph info`` can say why."""

    name: str
    target: str
    error: str


@dataclass
class _Registry:
    agents: dict[str, AgentSpec] = field(default_factory=dict)
    broken: dict[str, BrokenAgent] = field(default_factory=dict)
    discovered: bool = False


_REGISTRY = _Registry()


def register_agent(spec: AgentSpec, *, replace: bool = False) -> AgentSpec:
    """Add ``spec`` to the registry (returns it, so it can decorate a module constant).

    Raises:
        ConfigError: another agent already uses the name (pass ``replace=True`` to override).
    """
    _discover()
    if spec.name in _REGISTRY.agents and not replace and _REGISTRY.agents[spec.name] != spec:
        raise ConfigError(f"an agent named {spec.name!r} is already registered")
    _REGISTRY.agents[spec.name] = spec
    return spec


def _discover() -> None:
    if _REGISTRY.discovered:
        return
    _REGISTRY.discovered = True
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = entry.load()
            if not isinstance(spec, AgentSpec):
                raise TypeError(f"expected an AgentSpec, got {type(spec).__name__}")
            if spec.name != entry.name:
                raise ValueError(f"entry point is named {entry.name!r} but the spec says {spec.name!r}")
        except Exception as error:  # a broken plug-in must not take the others down
            logger.warning("agent plug-in %s (%s) failed to load: %s", entry.name, entry.value, error)
            _REGISTRY.broken[entry.name] = BrokenAgent(entry.name, entry.value, f"{type(error).__name__}: {error}")
            continue
        _REGISTRY.agents.setdefault(spec.name, spec)


def load_agents() -> tuple[dict[str, AgentSpec], dict[str, BrokenAgent]]:
    """All registered agents and the plug-ins that failed to load (discovering entry points once)."""
    _discover()
    return dict(sorted(_REGISTRY.agents.items())), dict(_REGISTRY.broken)


def get_agent(name: str) -> AgentSpec:
    """The agent called ``name``.

    Raises:
        ConfigError: no such agent; the message lists the registered names.
    """
    agents, broken = load_agents()
    if name in agents:
        return agents[name]
    if name in broken:
        raise ConfigError(f"agent {name!r} failed to load: {broken[name].error}")
    known = f"registered: {', '.join(agents)}" if agents else "no agent is registered"
    raise ConfigError(f"unknown agent {name!r} ({known})")


def _reset_for_tests() -> None:
    """Forget everything (tests only): the next call rediscovers entry points."""
    _REGISTRY.agents.clear()
    _REGISTRY.broken.clear()
    _REGISTRY.discovered = False
