"""NLI throughput: :class:`NLIModel` batched + cached vs one call per pair without a cache.

Workload (deterministic, ``random.Random(--seed)``): ``--pairs`` (premise, hypothesis) pairs shaped like
StepGap's stages D and E -- premises of 12–40 words (quotes and snippet windows), hypotheses of 6–14 words
(claims). A quarter of them (``--duplicate-share 0.25``) repeat an earlier pair, as Stage E does when rollouts
of one question test the same claim against the same prior snippets; the rest are distinct.

Engines, same checkpoint, same pairs, same process, after a warm-up:

* ``single``: ``NLIModel(cache_size=0)``, ``classify(p, h)`` once per pair (batch of one);
* ``batched``: ``NLIModel(cache_size=4096)``, one ``batch_classify(pairs, batch_size=--batch-size)``, the
  cache emptied before each timing (so repeats inside the workload are the only hits);
* ``batched_nocache`` (reported to split the two effects): ``batch_classify`` on the uncached engine (a
  pair repeated within one call is still scored once: that de-duplication is part of every batch call).

Each time is the best of ``--repeat`` runs; only the ratios matter (goal: ``speedup ≥ 3``). The model is a
tiny random DeBERTa-v2 classifier with a word-level tokenizer, built in a temporary directory, unless
``--checkpoint DIR`` names a real local NLI checkpoint. ``max_abs_diff`` compares the batched and single
probabilities (they must agree to float rounding).

    .venv/bin/python benchmarks/nli_batching.py [--pairs 512] [--batch-size 32] [--checkpoint DIR]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evigraph.machine import quiet_progress_bars
from evigraph.tools.nli import NLIModel, NLIResult

VOCABULARY = (
    "the a an of in on at by for with from to and or but not was is were are has had have been he she it they "
    "his her their its born died married wrote directed founded won played led built opened moved lived "
    "city river country capital state county district village island mountain lake coast border region "
    "film book song album novel series show band team club school university company church tower bridge "
    "president king queen author director singer actor player captain mayor founder brother sister son "
    "daughter wife husband father mother year century decade january march june september december first "
    "second third last largest oldest tallest famous american british french german italian spanish "
    "paris london berlin rome madrid vienna boston chicago texas ohio france england germany italy spain "
    "award prize championship war battle treaty election season album record station airport terminal"
)
WORDS = tuple(dict.fromkeys(VOCABULARY.split()))


def _sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."


def make_pairs(count: int, duplicate_share: float, seed: int) -> list[tuple[str, str]]:
    """``count`` pairs, ``round(count * duplicate_share)`` of them repeats of earlier ones, shuffled."""
    rng = random.Random(seed)
    distinct = [(_sentence(rng, 12, 40), _sentence(rng, 6, 14)) for _ in range(count - round(count * duplicate_share))]
    pairs = distinct + [rng.choice(distinct) for _ in range(count - len(distinct))]
    rng.shuffle(pairs)
    return pairs


def build_tiny_checkpoint(directory: Path, *, hidden: int, layers: int) -> Path:
    """A random DeBERTa-v2 3-way classifier (seed 0) and a word-level tokenizer over :data:`WORDS`."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: i for i, token in enumerate([*specials, *WORDS, "."])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=512,
    )
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"}
    config = transformers.DebertaV2Config(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 32),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
        pad_token_id=0,
        num_labels=3,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    with quiet_progress_bars():
        transformers.DebertaV2ForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _best(fn: Callable[[], object], repeat: int, before: Callable[[], object] = lambda: None) -> float:
    best = float("inf")
    for _ in range(repeat):
        before()
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _max_abs_diff(a: list[NLIResult], b: list[NLIResult]) -> float:
    fields = ("p_entailment", "p_neutral", "p_contradiction")
    return max(abs(getattr(x, f) - getattr(y, f)) for x, y in zip(a, b, strict=True) for f in fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--duplicate-share", type=float, default=0.25)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: 1 on ≤ 2 cores)")
    parser.add_argument("--checkpoint", type=Path, default=None, help="a local NLI checkpoint instead of the tiny one")
    parser.add_argument("--hidden", type=int, default=64, help="tiny model width")
    parser.add_argument("--layers", type=int, default=2, help="tiny model depth")
    args = parser.parse_args()

    pairs = make_pairs(args.pairs, args.duplicate_share, args.seed)
    distinct = len(set(pairs))
    with tempfile.TemporaryDirectory(prefix="nli-bench-") as scratch:
        checkpoint = args.checkpoint or build_tiny_checkpoint(Path(scratch), hidden=args.hidden, layers=args.layers)
        options = {"num_threads": args.threads, "batch_size": args.batch_size}
        name = None if args.checkpoint else f"tiny-deberta-v2-h{args.hidden}-l{args.layers}"
        single = NLIModel(checkpoint, cache_size=0, name=name, **options)
        batched = NLIModel(checkpoint, cache_size=4096, name=name, **options)
        for engine in (single, batched):  # warm-up: first calls allocate and pick kernels
            engine.batch_classify(pairs[:8])
            engine.classify(*pairs[0])

        single_s = _best(lambda: [single.classify(p, h) for p, h in pairs], args.repeat)
        nocache_s = _best(lambda: single.batch_classify(pairs), args.repeat)
        batched_s = _best(lambda: batched.batch_classify(pairs), args.repeat, before=batched.clear_cache)
        hits = batched.cache_info().hits
        diff = _max_abs_diff([single.classify(p, h) for p, h in pairs], batched.batch_classify(pairs))

    speedup, batching = single_s / batched_s, single_s / nocache_s
    print(f"checkpoint={single.engine} pairs={len(pairs)} distinct={distinct} batch_size={args.batch_size}")
    print(f"one call per pair, no cache: {single_s:.3f} s ({len(pairs) / single_s:.0f} pairs/s)")
    print(f"batched, no cache:           {nocache_s:.3f} s ({batching:.1f}x)")
    print(f"batched + cached:            {batched_s:.3f} s ({speedup:.1f}x, {hits} cache hits; goal >= 3x)")
    print(f"max |p_batched - p_single| = {diff:.2e}")
    print(
        f"RESULT pairs={len(pairs)} distinct={distinct} duplicate_share={args.duplicate_share} speedup={speedup:.2f} "
        f"batching_speedup={batching:.2f} batched_s={batched_s:.3f} batched_nocache_s={nocache_s:.3f} "
        f"single_s={single_s:.3f} cache_hits={hits} max_abs_diff={diff:.1e} goal_met={speedup >= 3 and diff < 1e-5}"
    )


if __name__ == "__main__":
    main()
