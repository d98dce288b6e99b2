"""The one line that tells a user how to guide a model whose reply could not be read.

Small models (the embedded one, SmolLM2 behind ``vllm serve``) rarely keep an agent's reply format on their own;
weak-model mode (``--generator.constrained``) makes every turn follow the agent's grammar. The mode is off by
default on every backend but the embedded model (``docs/configuration.md`` says why), so a run on a backend that
*could* have guided the model but was not asked to can end with ``no label (unparseable answer)`` or
``parse_ok: false`` and nothing saying what would help. :func:`guidance_hint` is that line; the CLI's verbs
(:mod:`evigraph.cli.kit`) print it and :class:`~evigraph.embed.verifier.Verifier` puts it in
``Verification.hint``, for every agent alike.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ("CLI_FLAG", "guidance_hint", "reply_unparsed", "weak_mode_available")

CLI_FLAG = "--generator.constrained"
_AGENT_SWITCHES = ("constrained", "guided")
"""The agent config fields that turn weak-model mode on for one agent (their names differ between agents)."""


def weak_mode_available(generator: object) -> bool:
    """Whether ``generator`` can run weak-model mode: it enforces regular expressions while decoding (what
    :func:`~evigraph.generators.factory.make_generator` requires), or it is a transformers model, which loads its
    grammar engine only when built constrained (so it lists no guides until then)."""
    if "regex" in getattr(generator, "supported_guides", ()):
        return True
    # Looked up, not imported: a TransformersGenerator instance means its module is loaded, and importing it here
    # would load torch for every caller.
    module = sys.modules.get("evigraph.generators.transformers")
    transformers_class = getattr(module, "TransformersGenerator", None)
    return isinstance(transformers_class, type) and isinstance(generator, transformers_class)


def _field(output: object, name: str) -> tuple[bool, Any]:
    """``(present, value)`` of one field of an agent's output (a pydantic model, or its dump)."""
    if isinstance(output, BaseModel):
        return name in type(output).model_fields, getattr(output, name, None)
    if isinstance(output, Mapping):
        return name in output, output.get(name)
    return False, None


def reply_unparsed(output: object) -> bool:
    """Whether an agent's output says the model's reply could not be read, by the fields agents share: a false
    ``parse_ok`` (SEVA, RLSeek), ``parse_mode == "failed"`` (RAG-Zeval), else a ``label`` (Veri-R1) or an
    ``answer`` (Search-R1, StepGap) that the reply did not give."""
    present, parse_ok = _field(output, "parse_ok")
    if present and isinstance(parse_ok, bool):
        return not parse_ok
    present, mode = _field(output, "parse_mode")
    if present:
        return mode == "failed"
    for name in ("label", "answer"):
        present, value = _field(output, name)
        if present:
            return value is None
    return False


def _agent_switch(config: object) -> str | None:
    """The agent config field that turns weak-model mode on for this agent, if it has one."""
    fields = type(config).model_fields if isinstance(config, BaseModel) else {}
    return next((name for name in _AGENT_SWITCHES if name in fields), None)


def guidance_hint(
    generator: object,
    output: object,
    *,
    config: object = None,
    surface: Literal["cli", "python"] = "cli",
) -> str | None:
    """The hint for a reply that could not be parsed, or ``None`` when there is nothing to suggest.

    Given only when all hold: the reply was not parsed (:func:`reply_unparsed`), ``generator`` can guide decoding
    (:func:`weak_mode_available`) and weak-model mode was off -- neither the generator's ``constrained`` nor the
    agent's own switch (``constrained``/``guided`` in ``config``) turned it on. A model that was guided and still
    failed needs another model, not this setting.

    Args:
        generator: the run's generator.
        output: the agent's output (its model or its dump).
        config: the agent's config, to see its own switch.
        surface: ``cli`` names the flag; ``python`` names the setting of :class:`~evigraph.embed.verifier.Verifier`.
    """
    if getattr(generator, "constrained", False) or not weak_mode_available(generator):
        return None
    switch = _agent_switch(config)
    if switch is not None and getattr(config, switch, None):
        return None
    if not reply_unparsed(output):
        return None
    name = getattr(generator, "name", "the model")
    if surface == "cli":
        how = f"add {CLI_FLAG}"
    elif switch is not None:
        how = f"pass {switch}=True to the Verifier"
    else:
        how = "set verifier.generator.constrained = True (or EVIGRAPH_GENERATOR__CONSTRAINED=true before a spec string)"
    return (
        f"hint: the model's reply could not be parsed and weak-model mode was off; {name} can guide every reply "
        f"with the agent's grammar (small models need it): {how}"
    )
