"""The verification API of ``evigraph serve``: the served agents' input fields in, a
:class:`~evigraph.verification.Verification` out.

- ``POST /v1/verify/{agent}``: a JSON object of the agent's input fields → the verdict;
- ``POST /v1/verify/{agent}/batch``: ``{"inputs": [{...}, ...]}`` → ``{"verifications": [...]}``, one verdict per
  input in order, run concurrently (they share the model's batched calls);
- ``GET /v1/agents``: each served agent's name, description and input JSON schema.

Each agent gets routes of its own, so the OpenAPI schema FastAPI generates shows each one's input model (the
agent's input TypedDict as a pydantic model, :func:`~evigraph.embed.tool.tool_args_schema`, with unknown fields
refused). Input problems are 422 naming the field -- FastAPI's validation (malformed JSON, a missing field, a wrong
type, an unknown field), then the verifier's own checks (:meth:`~evigraph.embed.verifier.Verifier.inputs`: blank
text) -- and nothing runs. Once the inputs are valid the answer is a verdict, HTTP 200: a run that failed or ran
past the deadline is one with ``passed=False`` and ``error`` set (the batch form gives each input its own), never
a hung socket. A run past the deadline is cancelled, with every task it started.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from evigraph.embed.tool import tool_args_schema
from evigraph.embed.verifier import Verifier
from evigraph.errors import ConfigError, GeneratorError
from evigraph.registry import get_agent
from evigraph.serving.disconnect import CLIENT_CLOSED, ClientGone, until_disconnected
from evigraph.serving.gate import record_of
from evigraph.serving.metrics import ServeMetrics
from evigraph.verification import Verification

__all__ = (
    "AgentInfo",
    "AgentList",
    "BatchResult",
    "batch_path",
    "request_model",
    "run_verification",
    "verify_path",
    "verify_router",
)

logger = logging.getLogger(__name__)

_FIELD_NAMED = re.compile(r"input '([^']+)'")
"""How :func:`evigraph.inputs.check_inputs` names the field it refuses."""
_STRICT = ConfigDict(extra="forbid")


class AgentInfo(BaseModel):
    """One served agent, as ``GET /v1/agents`` lists it."""

    name: str
    description: str
    verify: str
    """The path of its ``POST`` verification."""
    batch: str
    """The path of its batch form."""
    input_schema: dict[str, Any]
    """The JSON schema of the request body (the agent's input fields)."""


class AgentList(BaseModel):
    """``GET /v1/agents``."""

    agents: list[AgentInfo]


class BatchResult(BaseModel):
    """The answer of a batch: one verdict per input, in order."""

    verifications: list[Verification]


def verify_path(agent: str) -> str:
    return f"/v1/verify/{agent}"


def batch_path(agent: str) -> str:
    return f"/v1/verify/{agent}/batch"


async def run_verification(
    verifier: Verifier, values: Mapping[str, Any], *, deadline_s: float, started: float | None = None
) -> tuple[Verification, int]:
    """Run ``verifier`` over checked ``values`` until ``deadline_s`` after ``started`` (the event loop's clock;
    default: now): ``(verdict, tokens the model generated)``.

    A backend failure, a run past the deadline (cancelled, with the tasks it started) or any other failure of the
    run is a failed verdict with ``error`` set.

    Raises:
        ValidationError: the agent's own models refused the inputs' content (an input problem: 422).
    """
    loop = asyncio.get_running_loop()
    timer = asyncio.timeout_at((loop.time() if started is None else started) + deadline_s)
    try:
        async with timer:
            result = await verifier.graph.ainvoke(dict(values))
    except TimeoutError:
        if not timer.expired():
            raise
        return _failed(verifier, f"DeadlineExceeded: no verdict within {deadline_s:g} s"), 0
    except GeneratorError as error:
        return _failed(verifier, f"{type(error).__name__}: {error}"), 0
    except ValidationError:
        raise
    except Exception as error:
        # The type only at ERROR: messages of the agents' errors may quote the inputs, which the logs never hold.
        logger.error("%s run failed: %s", verifier.name, type(error).__name__)
        logger.debug("%s run failed", verifier.name, exc_info=True)
        return _failed(verifier, f"{type(error).__name__}: {error}"), 0
    timing = getattr(result.get("trajectory"), "timing", None)
    return verifier.verification(result), int(getattr(timing, "generated_tokens", 0) or 0)


def _failed(verifier: Verifier, error: str) -> Verification:
    return Verification(agent=verifier.name, passed=False, error=error)


def request_model(verifier: Verifier) -> type[BaseModel]:
    """The request body of ``verifier``'s agent: its input TypedDict as a pydantic model (every field, ``id`` and
    ``gold`` included), unknown fields refused; any JSON object for an agent that declares no input schema."""
    camel = "".join(part.capitalize() for part in re.split(r"[-_]", verifier.name))
    schema = verifier.input_schema
    if schema is None:
        return create_model(f"{camel}Request", __config__=ConfigDict(extra="allow"))
    fields = tuple(typing.get_type_hints(schema))
    base = tool_args_schema(schema, name=f"verify_{verifier.name.replace('-', '_')}", fields=fields)
    doc = f"The input fields of {verifier.name} (its {schema.__name__})."
    return type(f"{camel}Request", (base,), {"__module__": __name__, "__doc__": doc, "model_config": _STRICT})


def _values(body: BaseModel) -> dict[str, Any]:
    """The fields a client sent; a ``null`` optional field is left out, as the agent sees an absent one."""
    return {key: getattr(body, key) for key in body.model_fields_set if getattr(body, key) is not None}


def _checked(verifier: Verifier, body: BaseModel, *, at: tuple[str | int, ...]) -> dict[str, Any]:
    """``body``'s values through the verifier's own input checks, a refusal as FastAPI's 422 naming the field."""
    try:
        return verifier.inputs(_values(body))
    except ConfigError as error:
        named = _FIELD_NAMED.search(str(error))
        loc = (*at, named.group(1)) if named else at
        raise RequestValidationError([{"type": "value_error", "loc": loc, "msg": str(error), "input": None}]) from None


def _refused_content(error: ValidationError, *, at: tuple[str | int, ...]) -> RequestValidationError:
    """An agent model's refusal of the inputs' content as a 422 (field paths and messages, never the values)."""
    return RequestValidationError(
        [{"type": e["type"], "loc": (*at, *e["loc"]), "msg": e["msg"], "input": None} for e in error.errors()]
    )


def verify_router(
    verifiers: Mapping[str, Verifier], *, metrics: ServeMetrics, deadline_s: float, max_batch: int
) -> APIRouter:
    """The routes of the module docstring for ``verifiers`` (agent name → its verifier, built once and shared by
    every request)."""
    router = APIRouter(tags=["verification"])
    infos: list[AgentInfo] = []
    for name, verifier in verifiers.items():
        model = request_model(verifier)
        batch = create_model(
            f"{model.__name__.removesuffix('Request')}Batch",
            __doc__=f"Several inputs of {name}, verified concurrently.",
            inputs=(list[model], Field(min_length=1, max_length=max_batch)),  # type: ignore[valid-type]
        )
        summary = get_agent(name).description
        router.add_api_route(
            verify_path(name),
            _single(verifier, model, metrics=metrics, deadline_s=deadline_s),
            methods=["POST"],
            response_model=Verification,
            summary=f"Verify with {name}",
            description=summary,
            operation_id=f"verify_{name.replace('-', '_')}",
        )
        router.add_api_route(
            batch_path(name),
            _batch(verifier, batch, metrics=metrics, deadline_s=deadline_s),
            methods=["POST"],
            response_model=BatchResult,
            summary=f"Verify several inputs with {name}",
            description=summary,
            operation_id=f"verify_{name.replace('-', '_')}_batch",
        )
        infos.append(
            AgentInfo(
                name=name,
                description=summary,
                verify=verify_path(name),
                batch=batch_path(name),
                input_schema=model.model_json_schema(),
            )
        )
    listing = AgentList(agents=infos)
    served = ", ".join(verifiers) or "none"

    @router.get("/v1/agents", response_model=AgentList, summary="The served agents and their input schemas")
    async def agents() -> AgentList:
        return listing

    async def not_served(agent: str) -> None:
        raise HTTPException(404, f"agent {agent!r} is not served here (served: {served})")

    for path in (verify_path("{agent}"), batch_path("{agent}")):
        router.add_api_route(path, not_served, methods=["POST"], include_in_schema=False)
    return router


def _single(verifier: Verifier, model: type[BaseModel], *, metrics: ServeMetrics, deadline_s: float) -> Any:
    async def verify(request: Request, body: BaseModel) -> Response:
        values = _checked(verifier, body, at=("body",))
        try:
            verdict, tokens = await until_disconnected(
                request, run_verification(verifier, values, deadline_s=deadline_s)
            )
        except ValidationError as error:
            raise _refused_content(error, at=("body",)) from None
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        _count(request, metrics, [(verdict, tokens)])
        return _json(verdict)

    return _with_body(verify, model)


def _batch(verifier: Verifier, model: type[BaseModel], *, metrics: ServeMetrics, deadline_s: float) -> Any:
    async def verify_batch(request: Request, body: BaseModel) -> Response:
        items: Sequence[BaseModel] = body.inputs  # type: ignore[attr-defined]
        checked = [_checked(verifier, item, at=("body", "inputs", i)) for i, item in enumerate(items)]
        started = asyncio.get_running_loop().time()  # one deadline for the whole batch: the client waits for all

        async def one(i: int, values: dict[str, Any]) -> tuple[Verification, int]:
            try:
                return await run_verification(verifier, values, deadline_s=deadline_s, started=started)
            except ValidationError as error:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'inputs'}: {e['msg']}" for e in error.errors())
                return _failed(verifier, f"InvalidInput: inputs.{i}: {problems}"), 0

        async def every() -> list[tuple[Verification, int]]:
            return list(await asyncio.gather(*(one(i, values) for i, values in enumerate(checked))))

        try:
            results = await until_disconnected(request, every())
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        _count(request, metrics, results)
        return _json(BatchResult(verifications=[verdict for verdict, _ in results]))

    return _with_body(verify_batch, model)


def _json(answer: BaseModel) -> Response:
    """``answer`` as its JSON response, serialised once by pydantic (FastAPI would validate the verdict against
    ``response_model`` again first: the route declares the model for the OpenAPI schema only)."""
    return Response(answer.model_dump_json(), media_type="application/json")


def _with_body(endpoint: Any, model: type[BaseModel]) -> Any:
    """``endpoint`` declaring ``model`` as its JSON body, for FastAPI (the model is built at run time)."""
    request = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request)
    body = inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=model)
    endpoint.__signature__ = inspect.Signature([request, body], return_annotation=inspect.Signature.empty)
    return endpoint


def _count(request: Request, metrics: ServeMetrics, results: Sequence[tuple[Verification, int]]) -> None:
    record = record_of(request.scope)
    for verdict, tokens in results:
        metrics.verdict(verdict, tokens=tokens)
        if record is not None:
            record.outcomes.append(verdict.passed)
