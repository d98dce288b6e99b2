"""A LangChain chat model for ``evigraph serve`` run as a subprocess (``--model langchain:tests.serving.gated_model:
model``): it answers as SEVA judging by years (tests/embed/hosts.py), but only once the file named by
``GATED_SEVA_FILE`` exists (not an ``EVIGRAPH_*`` name: those are settings), so a test holds requests in flight
for as long as it needs and releases them by creating the file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from evigraph.generators.types import SamplingParams
from evigraph.trajectory import Segment
from tests.embed.hosts import scripted

GATE_ENV = "GATED_SEVA_FILE"


def _gate() -> Path:
    return Path(os.environ[GATE_ENV])


async def _answer(messages: list[BaseMessage]) -> ChatResult:
    transcript = [Segment(origin="prompt", role="user", text=str(m.content)) for m in messages]
    reply = await scripted("seva").continue_transcript(transcript, SamplingParams())
    return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply.text))])


class GatedSeva(BaseChatModel):
    """SEVA's scripted judge behind a file gate (see the module docstring)."""

    @property
    def _llm_type(self) -> str:
        return "gated-seva"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        raise NotImplementedError("the server calls the model asynchronously")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        while not _gate().exists():
            await asyncio.sleep(0.01)
        return await _answer(messages)


def model() -> GatedSeva:
    return GatedSeva()
