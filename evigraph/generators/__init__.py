"""Generation backends behind one interface (:class:`Generator`).

Heavy backends import lazily: ``from evigraph.generators import TransformersGenerator`` loads torch and
transformers only when that name is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from evigraph.generators.base import BaseGenerator, ContinuationScorer, Generator
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import Continuation, Guide, SamplingParams, StructuredError, StructuredResult

if TYPE_CHECKING:
    from evigraph.generators.langchain_model import ChatModelGenerator
    from evigraph.generators.openai_compat import OpenAICompatibleGenerator
    from evigraph.generators.transformers import TransformersGenerator
    from evigraph.generators.vllm import VLLMGenerator

__all__ = (
    "BaseGenerator",
    "ChatModelGenerator",
    "Continuation",
    "ContinuationScorer",
    "Generator",
    "Guide",
    "OpenAICompatibleGenerator",
    "SamplingParams",
    "ScriptedGenerator",
    "StructuredError",
    "StructuredResult",
    "TransformersGenerator",
    "VLLMGenerator",
)

_LAZY = {
    "TransformersGenerator": "evigraph.generators.transformers",
    "VLLMGenerator": "evigraph.generators.vllm",
    "OpenAICompatibleGenerator": "evigraph.generators.openai_compat",
    "ChatModelGenerator": "evigraph.generators.langchain_model",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'evigraph.generators' has no attribute {name!r}")
