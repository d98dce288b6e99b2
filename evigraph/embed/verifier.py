"""A registered agent made ready to check things for a host: the one runner under every embedding form.

:class:`Verifier` resolves, once, what a host names -- the agent (through the registry, never by name in this
code), the model (a model spec, an evigraph :class:`~evigraph.generators.base.Generator`, or any LangChain
``BaseChatModel``), the search tool and the NLI engine -- compiles the agent's verifier graph and maps every
result to a :class:`~evigraph.verification.Verification` with the agent's own mapping (``AgentSpec.
verification``). The node, the tool, the middleware and the router are thin shapes around it.

A LangChain chat model drives the verifier as a text backend: no token ids, so no logprob confidences (Veri-R1's
label confidence, StepGap's stage confidences fall back to their defaults; ``ChatOpenAI`` against vLLM asking for
``return_tokens_as_token_ids`` is the exception) and no guided decoding (weak-model mode needs a backend that
enforces a grammar). Inference is all embedding needs; training needs token ids. A reply that could not be parsed
on a backend that could have guided it gets ``Verification.hint`` naming the setting.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from evigraph.embed.agent import agent_config, compile_graph, resolve_model
from evigraph.embed.saver import sync_host_config
from evigraph.errors import GeneratorError
from evigraph.event_loop import run_sync
from evigraph.verification import Verification

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ("Verifier",)


class Verifier:
    """One registered agent, compiled once, checking inputs for a host.

    Args:
        agent: a registered agent name (``veri-r1``, ``stepgap``, ``rlseek``, ``seva``, ``rag-zeval`` or a plug-in).
        model: see :func:`~evigraph.embed.agent.resolve_model`.
        search: see :func:`~evigraph.embed.agent.resolve_search` (agents that search).
        nli: an NLI engine or a checkpoint directory (agents that use one; StepGap).
        pass_if: overrides the agent's own ``passed`` (``lambda v: v.label in ("SUPPORT", "NOT ENOUGH INFO")``).
        **config: fields of the agent's config (``max_new_tokens=256``, ``offline=True`` ...).

    Raises:
        ConfigError: an unknown agent, one that declares no verification mapping, a config field it does not have.
    """

    def __init__(
        self,
        agent: str,
        *,
        model: Any = None,
        search: Any = None,
        nli: Any = None,
        pass_if: Callable[[Verification], bool] | None = None,
        **config: Any,
    ) -> None:
        from evigraph.registry import get_agent

        loaded = get_agent(agent).load()
        self.name = loaded.name
        self.mapping: Callable[[Mapping[str, Any]], Verification] = loaded.require("verification")
        self.input_schema: type | None = loaded.verifier_input_schema or loaded.input_schema
        self.pass_if = pass_if
        self.config = agent_config(loaded, config)
        self.generator = resolve_model(model)
        self.graph = compile_graph(loaded, self.generator, self.config, search=search, nli=nli, embedded=True)

    def inputs(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` checked against the verifier's input schema (required keys, no blank text).

        Raises:
            ConfigError: naming the field.
        """
        from evigraph.inputs import check_inputs

        if self.input_schema is not None:
            check_inputs(self.input_schema, values, where=f"{self.name} input")
        return dict(values)

    def verification(self, result: Mapping[str, Any]) -> Verification:
        """The agent's mapping of a graph result, with ``pass_if`` applied and -- when the model's reply could not
        be parsed on a backend that could have guided it -- the setting that would (``hint``)."""
        from evigraph.generators.guidance import guidance_hint

        verdict = self.mapping(result)
        if self.pass_if is not None and verdict.error is None:
            verdict = verdict.model_copy(update={"passed": bool(self.pass_if(verdict))})
        if verdict.error is None:
            hint = guidance_hint(self.generator, result.get("output"), config=self.config, surface="python")
            if hint is not None:
                verdict = verdict.model_copy(update={"hint": hint})
        return verdict

    async def averify(self, values: Mapping[str, Any], *, config: Mapping[str, Any] | None = None) -> Verification:
        """Check ``values`` (the agent's input fields). Inside a host graph's node the run is the node's subgraph:
        its steps stream under the node's namespace and an interrupt inside it pauses the host. A backend failure
        is a failed verdict with its ``error``."""
        checked = self.inputs(values)
        try:
            result = await self.graph.ainvoke(checked, config=config)
        except GeneratorError as error:
            # Most graphs record a backend failure on the trajectory; one that lets it through (StepGap's checker
            # over a judge) still gives the host a failed verdict, never a crash of the host.
            return Verification(agent=self.name, passed=False, error=f"{type(error).__name__}: {error}")
        return self.verification(result)

    def verify(self, values: Mapping[str, Any], *, config: Mapping[str, Any] | None = None) -> Verification:
        """:meth:`averify` for synchronous callers (on evigraph's one shared loop, so loop-bound clients such as
        ``ChatOpenAI``'s survive between calls; inside a synchronous host, through its saver's sync methods)."""

        synchronous = sync_host_config(cast("RunnableConfig | None", config))
        return run_sync(lambda: self.averify(values, config=synchronous))
