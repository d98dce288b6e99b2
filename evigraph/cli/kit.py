"""The plumbing every agent command shares, so an agent's CLI code holds only what is specific to it.

Write a command as a plain function with the flags that are its own and one parameter ``run: AgentRun``; mark it
with :func:`agent_command`. When the command is dispatched, :func:`bind_command` gives it ``--config``, the
``--generator.*`` flags, a flag per scalar field of the agent's config model, the flags of the tools it asks
for and of its options model, and calls it with an :class:`AgentRun` that turns those flags into settings (flags
> ``EVIGRAPH_*`` > the config file > defaults), the agent's config, the generator, the tools and the graph::

    @agent_command(resources=("search",))
    def run_command(run: AgentRun, claim: Annotated[str, typer.Argument()]) -> None:
        graph = run.graph(search=run.resource("search", default="demo"))
        result = run_sync(lambda: graph.ainvoke({"claim": claim}, context=run.context()))
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ValidationError
from rich.console import Console

from evigraph.cli.options import (
    GENERATOR_OPTIONS,
    RESOURCE_OPTIONS,
    ConfigOpt,
    Option,
    hidden,
    model_options,
    renamed,
)
from evigraph.cli.text_args import text_or_file
from evigraph.errors import ConfigError
from evigraph.jsonl import format_validation_error

if TYPE_CHECKING:
    from evigraph.config import Settings
    from evigraph.generators.base import Generator
    from evigraph.generators.types import SamplingParams
    from evigraph.graphs.kit.context import RunContext
    from evigraph.registry import LoadedAgent

__all__ = ("AgentRun", "CommandSpec", "agent_command", "bind_command", "text_or_file")

out_console = Console()
err_console = Console(stderr=True)

RUN_PARAMETER = "run"
_CONFIG_PARAMETER = "config__file"


@dataclass(frozen=True)
class CommandSpec:
    """What :func:`agent_command` records on a function."""

    resources: tuple[str, ...] = ()
    """Tools whose flags the command gets (``search``: ``--corpus``, ``--retriever-url``)."""
    options: type[BaseModel] | None = None
    """A model whose scalar fields become flags (values in :attr:`AgentRun.options`)."""
    generator: bool = True
    """Whether the command loads a model (the ``--generator.*`` flags)."""
    agent_config: bool = True
    """Whether the agent's config fields become flags."""
    model_flags: tuple[str, ...] = ()
    """Other names for the model flag in this command (``--teacher``); default ``--generator.model``/``--model``."""
    model_panel: str | None = None
    """The ``--help`` panel of the model's flags where it is not a generator (``check``'s judge)."""
    refuses: Mapping[str, str] = field(default_factory=dict)
    """Generated flags that cannot act in this command (``--generator.max-new-tokens`` where the cap is another
    flag), each with what to use instead: giving one is an error, and ``--help`` leaves them out."""


def agent_command(
    *,
    resources: Sequence[str] = (),
    options: type[BaseModel] | None = None,
    generator: bool = True,
    agent_config: bool = True,
    model_flags: Sequence[str] = (),
    refuses: Mapping[str, str] | None = None,
    model_panel: str | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Mark ``func`` as an agent command; :func:`bind_command` finishes it when it is dispatched."""

    def mark(func: Callable[..., None]) -> Callable[..., None]:
        spec = CommandSpec(
            resources=tuple(resources),
            options=options,
            generator=generator,
            agent_config=agent_config,
            model_flags=tuple(model_flags),
            model_panel=model_panel,
            refuses=dict(refuses or {}),
        )
        func.__agent_command__ = spec  # type: ignore[attr-defined]
        return func

    return mark


class AgentRun:
    """One invocation of an agent command: its settings, config, generator, tools and graph, each built on first
    use (so a bad data file fails before a model loads)."""

    def __init__(
        self,
        agent: LoadedAgent | None,
        *,
        config_path: Path | None,
        overrides: dict[str, Any],
        resource_flags: dict[str, dict[str, Any]],
        options: BaseModel | None,
        model_flag: str = "--model",
    ) -> None:
        self.agent = agent
        self.model_flag = model_flag
        """The flag that names this command's model (``--model``, ``--judge``, ``--teacher``), for messages."""
        self.config_path = config_path
        self.overrides = overrides
        self.resource_flags = resource_flags
        self.options = options
        self._settings: Settings | None = None
        self._config: BaseModel | None = None
        self._generator: Generator | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            from evigraph.config import load_settings

            self._settings = load_settings(self.overrides, config_path=self.config_path)
        return self._settings

    def config(self) -> BaseModel:
        """The agent's config (:func:`evigraph.config.agent_config`)."""
        if self._config is None:
            from evigraph.config import agent_config

            agent = self._require_agent()
            self._config = agent_config(self.settings(), agent.name, agent.require("config"))
        return self._config

    def sampling(self) -> SamplingParams:
        from evigraph.generators.factory import sampling_params

        return sampling_params(self.settings().generator)

    def generator(self) -> Generator:
        """The configured model, loaded once (a spinner on stderr while it loads)."""
        if self._generator is None:
            from evigraph.generators.factory import make_generator

            settings = self.settings()
            with err_console.status(f"loading {settings.generator.model} ..."):
                self._generator = make_generator(settings.generator)
        return self._generator

    def generator_for(self, model: str) -> Generator:
        """Another model for the same command (a probe writer, a cross-checker): the run's generator settings with
        ``model`` as the spec (:mod:`evigraph.generators.factory`). Not cached: each call loads a model."""
        from evigraph.generators.factory import make_generator

        settings = self.settings().generator.model_copy(update={"model": model})
        with err_console.status(f"loading {model} ..."):
            return make_generator(settings)

    def resource(self, name: str, *, default: str | None = None) -> Any | None:
        """Open the tool ``name`` from its flags, or ``None`` when none was given (``default`` names a corpus
        to use then)."""
        flags = {k: v for k, v in self.resource_flags.get(name, {}).items() if v is not None}
        if not flags and default is None:
            return None
        if name == "search":
            from evigraph.tools.search import open_search

            if default is not None and not flags.keys() & {"corpus", "retriever_url"}:
                flags = {"corpus": default, **flags}  # --retrieval alone applies to the default corpus
            with err_console.status("opening the search tool ..."):
                return open_search(**flags)
        if name == "nli":
            from evigraph.tools.nli import make_nli

            with err_console.status("loading the NLI model ..."):
                return make_nli(flags["checkpoint"])
        raise ConfigError(f"unknown resource {name!r}")

    def graph(self, *, config: BaseModel | None = None, **resources: Any) -> Any:
        """The agent's graph compiled with its config (or ``config``), the sampling settings and ``resources``,
        and no generator: runs take :meth:`context`. Compiling needs no model, so a wrong combination of
        options fails before one loads."""
        builder = self._require_agent().require("graph_builder")
        return builder(None, config=config or self.config(), sampling=self.sampling(), **resources)

    def context(self) -> RunContext:
        """The run context that hands each graph run the configured generator (loading it on first use)."""
        from evigraph.graphs.kit.context import RunContext

        return RunContext(generator=self.generator())

    def inputs(self, values: Mapping[str, Any], *, schema: type | None = None) -> dict[str, Any]:
        """``values`` as a graph input, checked against the agent's input schema (or ``schema``) before any model
        loads: a required key missing or a text field empty or blank is a :class:`ConfigError` naming the field
        (:func:`evigraph.inputs.check_inputs`)."""
        from evigraph.inputs import check_inputs

        schema = schema or self._require_agent().input_schema
        if schema is not None:
            check_inputs(schema, values)
        return dict(values)

    def run_once(
        self,
        inputs: dict[str, Any],
        *,
        show: Callable[[Any], None] | None = None,
        as_json: bool = False,
        ok: Callable[[Any], bool] = lambda _output: True,
        status: str = "checking ...",
        resources: Mapping[str, Any] | None = None,
        show_trajectory: Callable[[Any, Any], None] | None = None,
    ) -> None:
        """An agent verb's one graph run over ``inputs`` (checked first, :meth:`inputs`) with the graph built
        over ``resources``: print the trajectory as JSON (``as_json``) or ``show(output)`` (``show_trajectory
        (output, trajectory)`` where given), then the verdict's disagreement with its own reasoning
        (:meth:`note_disagreement`) and the plumbing-model note (:meth:`note_plumbing`); exit 1 when
        the run failed (the failure named on stderr) or ``ok(output)`` rejects what it concluded."""
        import sys

        import typer
        from rich.markup import escape

        from evigraph.event_loop import run_sync

        inputs = self.inputs(inputs)
        graph = self.graph(**(resources or {}))
        with err_console.status(status):
            result = run_sync(lambda: graph.ainvoke(inputs, context=self.context()))
        trajectory, output = result["trajectory"], result["output"]
        if as_json:
            sys.stdout.write(trajectory.model_dump_json(indent=2) + "\n")
        elif show_trajectory is not None:
            show_trajectory(output, trajectory)
        elif show is not None:
            show(output)
        self.note_disagreement(result, as_json=as_json)
        self.note_plumbing(as_json=as_json)
        if trajectory.error is not None:
            err_console.print(f"[red]run failed in {trajectory.error.where}: {escape(trajectory.error.message)}[/]")
            raise typer.Exit(1)
        self.note_guidance(output, as_json=as_json)
        if not ok(output):
            raise typer.Exit(1)

    def note_disagreement(self, result: Mapping[str, Any], *, as_json: bool) -> None:
        """Say in one line where the verdict contradicts the agent's own reasoning
        (:attr:`~evigraph.verification.Verification.disagreement`, from the agent's ``verification`` mapping, so
        this generic code never reads an agent's output itself): beside the output, or on stderr under JSON."""
        from evigraph.cli.render import print_note

        if self.agent is None or self.agent.verification is None:
            return
        verdict = self.agent.verification(result)
        line = None if verdict.disagreement is None else f"note: {verdict.disagreement}"
        print_note(line, as_json=as_json, console=out_console, err_console=err_console)

    def note_plumbing(self, *, as_json: bool) -> None:
        """Say in one line when the configured model is the embedded plumbing model
        (:func:`evigraph.cli.render.plumbing_note`): on stdout, or on stderr when stdout carries JSON."""
        from evigraph.cli.render import plumbing_note, print_note

        note = plumbing_note(self.settings().generator.model, self.model_flag)
        print_note(note, as_json=as_json, console=out_console, err_console=err_console)

    def note_guidance(self, output: Any, *, as_json: bool) -> None:
        """Name ``--generator.constrained`` in one line when the reply could not be parsed and the backend could
        have guided it (:func:`evigraph.generators.guidance.guidance_hint`): where the verb's output is, or on stderr
        when stdout carries JSON."""
        from evigraph.cli.render import print_note
        from evigraph.generators.guidance import guidance_hint

        config = self.config() if self.agent is not None and self.agent.config is not None else None
        hint = guidance_hint(self.generator(), output, config=config)
        print_note(hint, as_json=as_json, console=out_console, err_console=err_console)

    def describe(self) -> dict[str, Any]:
        """What a run directory pins: the agent, generator settings, agent config, tool flags and options."""
        settings = self.settings()
        described: dict[str, Any] = {
            "agent": self.agent.name if self.agent else None,
            "generator": settings.generator.model_dump(mode="json", exclude={"num_threads"}),
            "resources": self.resource_flags,
        }
        if self.agent is not None and self.agent.config is not None:
            described["config"] = self.config().model_dump(mode="json")
        if self.options is not None:
            described["options"] = self.options.model_dump(mode="json")
        return described

    def _require_agent(self) -> LoadedAgent:
        if self.agent is None:
            raise ConfigError("this command runs no agent")
        return self.agent


def _flags(annotation: Any) -> list[str]:
    declared = []
    for meta in get_args(annotation)[1:]:
        for flag in (getattr(meta, "default", None), *(getattr(meta, "param_decls", None) or ())):
            if isinstance(flag, str) and flag.startswith("-"):
                declared += flag.split("/")
    return declared


def bind_command(func: Callable[..., None], agent: LoadedAgent | None) -> Callable[..., None]:
    """The typer-ready command for ``func`` (marked by :func:`agent_command`) and ``agent``.

    Raises:
        ConfigError: a generated flag or parameter name collides with one of the command's own, or with
            another generated one (e.g. an agent config field named like a command option); the command refuses
            a flag it does not have.
    """
    spec: CommandSpec = getattr(func, "__agent_command__", CommandSpec())
    own = [p for p in inspect.signature(func, eval_str=True).parameters.values() if p.name != RUN_PARAMETER]
    generated: list[Option] = []
    if spec.generator:
        generated += [
            renamed(o, spec.model_flags if o.key == "generator.model" else (), panel=spec.model_panel)
            for o in GENERATOR_OPTIONS
        ]
    if agent is not None and agent.config is not None and spec.agent_config:
        inherited = getattr(agent.config, "inherit_from_generator", {})
        generated += model_options(agent.config, prefix="config__", panel="Agent", exclude=inherited)
    if spec.options is not None:
        generated += model_options(spec.options, prefix="options__", panel="Options")
    for resource in spec.resources:
        generated += RESOURCE_OPTIONS[resource]
    refused: dict[str, tuple[str, str]] = {}  # option name -> (its flag, what to use instead)
    for index, option in enumerate(generated):
        flag = next((f for f in _flags(option.annotation) if f in spec.refuses), None)
        if flag is not None:
            refused[option.name] = (flag, spec.refuses[flag])
            generated[index] = hidden(option)
    unknown = set(spec.refuses) - {flag for flag, _ in refused.values()}
    if unknown:
        raise ConfigError(f"{func.__name__} refuses {', '.join(sorted(unknown))}, which it does not have")

    seen: dict[str, str] = {}
    declared = [(p.name, p.annotation) for p in own] + [(_CONFIG_PARAMETER, ConfigOpt)]
    for name, annotation in declared + [(o.name, o.annotation) for o in generated]:
        for flag in _flags(annotation):
            if flag in seen:
                raise ConfigError(f"flag {flag} of {name!r} collides with {seen[flag]!r} in {func.__name__}")
            seen[flag] = name
    parameters = [
        *own,
        inspect.Parameter(_CONFIG_PARAMETER, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ConfigOpt),
        *(
            inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=o.annotation)
            for o in generated
        ),
    ]
    names = [p.name for p in parameters]
    if len(set(names)) != len(names):
        raise ConfigError(f"{func.__name__}: a parameter name collides with a generated one ({sorted(names)})")

    def command(**values: Any) -> None:
        for name, (flag, instead) in refused.items():
            if values[name] is not None:
                raise ConfigError(f"not used by this command: {instead}", source=flag)
        overrides: dict[str, Any] = {}
        resource_flags: dict[str, dict[str, Any]] = {r: {} for r in spec.resources}
        option_values: dict[str, Any] = {}
        for option in generated:
            value = values.pop(option.name)
            group, _, _ = option.name.partition("__")
            if group == "generator":
                overrides[option.key] = value
            elif group == "config":
                overrides[f"agents.{agent.name}.{option.key}"] = value  # type: ignore[union-attr]
            elif group == "options":
                if value is not None:
                    option_values[option.key] = value
            else:
                resource_flags[group][option.key] = value
        options = None
        if spec.options is not None:
            try:
                options = spec.options.model_validate(option_values)
            except ValidationError as error:
                raise ConfigError(format_validation_error(error), source="options") from None
        run = AgentRun(
            agent,
            config_path=values.pop(_CONFIG_PARAMETER),
            overrides=overrides,
            resource_flags=resource_flags,
            options=options,
            model_flag=spec.model_flags[0] if spec.model_flags else "--model",
        )
        func(**values, **{RUN_PARAMETER: run})

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__doc__ = func.__doc__
    command.__name__ = func.__name__
    return command
