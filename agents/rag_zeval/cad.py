"""Context-aware decoding (CAD) of several contrast weights at once (specs/rag-zeval.md §2.4, O12).

Token ``i`` of the response decoded with weight ``alpha`` is the greedy choice over

    (1 + alpha) * logit(. | with-context prompt, y_<i)  -  alpha * logit(. | no-context prompt, y_<i)

where both prompts are continued by the same prefix ``y_<i`` (that alpha's own response so far).

:func:`cad_generate` decodes every alpha in one batch: row ``k`` of the with-context batch and row ``k`` of the
no-context batch belong to ``alphas[k]``. Each prompt is run once (batch 1) and its KV cache is then repeated
over the alphas, so the two batches need no padding or attention mask (all rows of a batch share the prompt
and grow one token per step together). Every step is two batched forward passes that feed only the newest
token of each row through ``past_key_values``. A row that ends (an EOS id, or a stop string in its text) is
removed from both batches and both caches, so finished responses cost nothing further.

torch and transformers are imported inside the functions; importing this module stays light.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    import torch

__all__ = ("CadOutput", "FinishReason", "cad_generate", "contrast_logits", "default_eos_ids")

FinishReason = Literal["eos", "stop", "length"]
"""Why a response ended: an EOS id was chosen, a stop string appeared in its text, or the token cap was hit."""


class CadOutput(BaseModel):
    """One alpha's greedy CAD response."""

    model_config = ConfigDict(frozen=True)

    alpha: float
    token_ids: tuple[int, ...]
    """The chosen tokens, in order. The EOS id that ended a response is not included; the tokens that spelt a
    stop string are (``text`` is cut before it)."""
    text: str
    """The decoded tokens (special tokens skipped), cut at the first stop string; not stripped."""
    finish_reason: FinishReason


def contrast_logits(logits_ctx: torch.Tensor, logits_noctx: torch.Tensor, alpha: Any) -> torch.Tensor:
    """``(1 + alpha) * logits_ctx - alpha * logits_noctx``.

    ``alpha`` is a number or a tensor that broadcasts against the logits, e.g. shape ``(A, 1)`` against
    ``(A, V)`` logits (one alpha per row) or ``(A, 1)`` against a single ``(V,)`` pair (every alpha applied to
    the same logits, giving ``(A, V)``).
    """
    return (1 + alpha) * logits_ctx - alpha * logits_noctx


def default_eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """The ids that end a response: the tokenizer's EOS plus the model's generation-config EOS id(s)."""
    ids: set[int] = set()
    candidates: list[Any] = [getattr(tokenizer, "eos_token_id", None)]
    generation_config = getattr(model, "generation_config", None)
    candidates.append(getattr(generation_config, "eos_token_id", None))
    for value in candidates:
        if value is None:
            continue
        if isinstance(value, int):
            ids.add(value)
        else:
            ids.update(int(v) for v in value)
    return frozenset(ids)


def _as_row(ids: Any, device: Any) -> torch.Tensor:
    """A prompt (list of ids, 1-D or ``(1, L)`` tensor) as a ``(1, L)`` long tensor on ``device``."""
    import torch

    tensor = torch.as_tensor(ids, dtype=torch.long, device=device)
    if tensor.dim() == 2 and tensor.shape[0] == 1:
        tensor = tensor[0]
    if tensor.dim() != 1 or tensor.numel() == 0:
        raise ValueError(f"a prompt must be a non-empty sequence of token ids, got shape {tuple(tensor.shape)}")
    return tensor.unsqueeze(0)


def _forward_kwargs(model: Any) -> dict[str, Any]:
    """``logits_to_keep=1`` where the model takes it (a 6,000-token prompt would otherwise materialise a
    vocabulary-sized row for every position)."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return {}
    return {"logits_to_keep": 1} if "logits_to_keep" in parameters else {}


def _prefill(model: Any, prompt: torch.Tensor, rows: int, extra: dict[str, Any]) -> tuple[torch.Tensor, Any]:
    """Run ``prompt`` once and return its last-position logits and cache, both repeated to ``rows`` rows."""
    output = model(input_ids=prompt, use_cache=True, **extra)
    cache = output.past_key_values
    logits = output.logits[:, -1, :]
    if rows == 1:
        return logits, cache
    if hasattr(cache, "batch_repeat_interleave"):
        cache.batch_repeat_interleave(rows)
        return logits.expand(rows, -1), cache
    # A cache type without batch expansion: run the prompt once per row instead (same result, more work).
    output = model(input_ids=prompt.expand(rows, -1), use_cache=True, **extra)
    return output.logits[:, -1, :], output.past_key_values


def _select_rows(cache: Any, keep: torch.Tensor) -> Any:
    if not hasattr(cache, "batch_select_indices"):
        raise TypeError(f"{type(cache).__name__} cannot drop finished rows (no batch_select_indices)")
    cache.batch_select_indices(keep)
    return cache


def _find_stop(text: str, stop_strings: Iterable[str]) -> int:
    """The index of the earliest stop string in ``text``, or -1."""
    hits = [index for stop in stop_strings if stop and (index := text.find(stop)) >= 0]
    return min(hits) if hits else -1


def cad_generate(
    model: Any,
    tokenizer: Any,
    with_context_ids: Sequence[int] | torch.Tensor,
    without_context_ids: Sequence[int] | torch.Tensor,
    alphas: Sequence[float],
    *,
    max_new_tokens: int = 256,
    stop_strings: Sequence[str] = ("\nQuestion:",),
    eos_ids: Collection[int] | None = None,
) -> list[CadOutput]:
    """Greedy CAD responses for every alpha at once (one :class:`CadOutput` per alpha, in ``alphas`` order).

    Args:
        model: a transformers causal LM (in eval mode) that takes ``past_key_values`` and returns a cache that
            supports ``batch_repeat_interleave`` / ``batch_select_indices`` (transformers' ``DynamicCache``).
        tokenizer: decodes responses for the stop-string check and ``text``.
        with_context_ids: the with-passage prompt as token ids (``Answer:`` last).
        without_context_ids: the no-passage prompt as token ids.
        alphas: the contrast weights; ``0`` is plain decoding on the with-context prompt.
        max_new_tokens: the cap per response (spec O12: 256).
        stop_strings: a response ends when its decoded text contains one (spec O12: a new ``Question:`` line).
        eos_ids: ids that end a response; default :func:`default_eos_ids`.
    """
    import torch

    alpha_values = [float(a) for a in alphas]
    if not alpha_values:
        return []
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
    device = next(model.parameters()).device
    prompt_ctx = _as_row(with_context_ids, device)
    prompt_noctx = _as_row(without_context_ids, device)
    stops = tuple(s for s in stop_strings if s)
    ends = frozenset(int(i) for i in eos_ids) if eos_ids is not None else default_eos_ids(model, tokenizer)
    extra = _forward_kwargs(model)

    count = len(alpha_values)
    alpha_column = torch.tensor(alpha_values, dtype=torch.float32, device=device).unsqueeze(1)
    generated: list[list[int]] = [[] for _ in range(count)]
    texts: list[str | None] = [None] * count
    reasons: list[FinishReason] = ["length"] * count

    with torch.inference_mode():
        logits_ctx, cache_ctx = _prefill(model, prompt_ctx, count, extra)
        logits_noctx, cache_noctx = _prefill(model, prompt_noctx, count, extra)
        active = list(range(count))  # batch position -> alpha index
        for step in range(max_new_tokens):
            scores = contrast_logits(logits_ctx.float(), logits_noctx.float(), alpha_column[active])
            chosen = scores.argmax(dim=-1).tolist()
            keep: list[int] = []
            for position, (row, token) in enumerate(zip(active, chosen, strict=True)):
                if token in ends:
                    reasons[row] = "eos"
                    continue
                generated[row].append(token)
                if stops:
                    decoded = tokenizer.decode(generated[row], skip_special_tokens=True)
                    cut = _find_stop(decoded, stops)
                    if cut >= 0:
                        reasons[row], texts[row] = "stop", decoded[:cut]
                        continue
                keep.append(position)
            if not keep or step == max_new_tokens - 1:
                break
            if len(keep) < len(active):
                index = torch.tensor(keep, dtype=torch.long, device=device)
                cache_ctx = _select_rows(cache_ctx, index)
                cache_noctx = _select_rows(cache_noctx, index)
                active = [active[p] for p in keep]
            step_ids = torch.tensor([[generated[row][-1]] for row in active], dtype=torch.long, device=device)
            output_ctx = model(input_ids=step_ids, past_key_values=cache_ctx, use_cache=True, **extra)
            output_noctx = model(input_ids=step_ids, past_key_values=cache_noctx, use_cache=True, **extra)
            cache_ctx, cache_noctx = output_ctx.past_key_values, output_noctx.past_key_values
            logits_ctx, logits_noctx = output_ctx.logits[:, -1, :], output_noctx.logits[:, -1, :]

    outputs = []
    for row, alpha in enumerate(alpha_values):
        text = texts[row]
        if text is None:
            text = tokenizer.decode(generated[row], skip_special_tokens=True)
        outputs.append(CadOutput(alpha=alpha, token_ids=tuple(generated[row]), text=text, finish_reason=reasons[row]))
    return outputs
