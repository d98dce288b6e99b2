"""The agent file ``evigraph train`` hands to OpenRLHF (``--train.agent_func_path``).

OpenRLHF loads this file by path inside every vLLM rollout actor and constructs ``AgentExecutor()`` with no
arguments; the rollout config arrives through the environment variable
:data:`evigraph.training.executor.CONFIG_ENV` (set in Ray's ``runtime_env``). Everything else is
:class:`evigraph.training.executor.GraphExecutor`: the agent's own graph is the rollout.
"""

from __future__ import annotations

from typing import Any

from openrlhf.utils.agent import AgentExecutorBase

from evigraph.training.executor import GraphExecutor, load_rollout_config


class AgentExecutor(AgentExecutorBase):
    """OpenRLHF's executor interface over :class:`~evigraph.training.executor.GraphExecutor`."""

    def __init__(self) -> None:
        self._executor = GraphExecutor(load_rollout_config())

    async def execute(
        self,
        prompt: Any,
        label: Any,
        sampling_params: Any,
        max_length: int,
        hf_tokenizer: Any,
        llm_engine: Any,
        images: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        # Later OpenRLHF releases may pass more keyword arguments; they are accepted and ignored.
        return await self._executor.execute(
            prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine, images=images, **kwargs
        )
