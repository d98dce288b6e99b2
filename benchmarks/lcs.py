"""Longest common substring: suffix automaton vs ``difflib.SequenceMatcher(autojunk=False).find_longest_match``.

Each sample is a 20,000-character source of seeded random words (Zipf-distributed vocabulary, sentences
with punctuation) and five 200-character quotes: one verbatim slice, three slices with a few words
replaced (as a paraphrasing model would), one slice of another sample's source. Both methods get their
own reusable preprocessing: the automaton is built once per source, and difflib's ``set_seq2(source)``
index is built once per source too; each quote is then one query. Per-sample time = build + 5 queries.
Every LCS length must agree. Each time is the best of ``--repeat`` runs; the medians over samples and quotes are
reported, and only the ratios matter.

    .venv/bin/python benchmarks/lcs.py [--samples 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import difflib
import random
import statistics
import string
import time
from collections.abc import Callable
from typing import NamedTuple

from evigraph.tools.lcs import SuffixAutomaton

SOURCE_CHARS = 20_000
QUOTE_CHARS = 200
QUOTES_PER_SAMPLE = 5


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    return ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 10))) for _ in range(size)]


def _text(rng: random.Random, vocabulary: list[str], chars: int) -> str:
    weights = [1.0 / rank for rank in range(1, len(vocabulary) + 1)]
    sentences: list[str] = []
    total = 0
    while total < chars:
        words = rng.choices(vocabulary, weights, k=rng.randint(5, 25))
        sentence = " ".join(words).capitalize() + rng.choice(".,;.?.")
        sentences.append(sentence)
        total += len(sentence) + 1
    return " ".join(sentences)[:chars]


def _perturb(rng: random.Random, quote: str, vocabulary: list[str], edits: int) -> str:
    words = quote.split(" ")
    for _ in range(edits):
        words[rng.randrange(len(words))] = rng.choice(vocabulary)
    return " ".join(words)[:QUOTE_CHARS]


def _samples(seed: int, count: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    vocabulary = _vocabulary(rng)
    sources = [_text(rng, vocabulary, SOURCE_CHARS) for _ in range(count)]
    samples = []
    for index, source in enumerate(sources):
        other = sources[(index + 1) % count]
        quotes = []
        for kind in range(QUOTES_PER_SAMPLE):
            text = other if kind == QUOTES_PER_SAMPLE - 1 else source
            start = rng.randrange(len(text) - QUOTE_CHARS)
            quote = text[start : start + QUOTE_CHARS]
            if 1 <= kind <= 3:
                quote = _perturb(rng, quote, vocabulary, edits=kind + 1)
            quotes.append(quote)
        samples.append((source, quotes))
    return samples


def _time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


class _SampleTimes(NamedTuple):
    sam_build: float
    difflib_build: float
    sam_queries: list[float]
    difflib_queries: list[float]
    mismatches: int


def _time_sample(source: str, quotes: list[str], repeat: int) -> _SampleTimes:
    sam_build = _time(lambda: SuffixAutomaton(source), repeat)
    # A fresh matcher per timing: set_seq2 with the same object again is a no-op.
    difflib_build = _time(lambda: difflib.SequenceMatcher(None, "", source, autojunk=False), repeat)
    sam = SuffixAutomaton(source)
    matcher = difflib.SequenceMatcher(None, "", source, autojunk=False)
    sam_queries, difflib_queries, mismatches = [], [], 0
    for quote in quotes:

        def difflib_query(quote: str = quote) -> difflib.Match:
            matcher.set_seq1(quote)
            return matcher.find_longest_match(0, len(quote), 0, len(source))

        sam_queries.append(_time(lambda quote=quote: sam.longest_common_substring(quote), repeat))
        difflib_queries.append(_time(difflib_query, repeat))
        mismatches += sam.longest_common_substring(quote).length != difflib_query().size
    return _SampleTimes(sam_build, difflib_build, sam_queries, difflib_queries, mismatches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    sam_build, sam_query, dl_build, dl_query = [], [], [], []
    mismatches = 0
    for source, quotes in _samples(args.seed, args.samples):
        timings = _time_sample(source, quotes, args.repeat)
        sam_build.append(timings.sam_build)
        dl_build.append(timings.difflib_build)
        sam_query.extend(timings.sam_queries)
        dl_query.extend(timings.difflib_queries)
        mismatches += timings.mismatches

    build_s, query_s = statistics.median(sam_build), statistics.median(sam_query)
    dl_build_s, dl_query_s = statistics.median(dl_build), statistics.median(dl_query)
    sample_s = build_s + QUOTES_PER_SAMPLE * query_s
    dl_sample_s = dl_build_s + QUOTES_PER_SAMPLE * dl_query_s
    per_quote = dl_query_s / query_s
    per_sample = dl_sample_s / sample_s
    print(f"{args.samples} samples x {QUOTES_PER_SAMPLE} quotes, source {SOURCE_CHARS} chars, quote {QUOTE_CHARS}")
    print(f"automaton: build {build_s * 1e3:.2f} ms, per quote {query_s * 1e6:.1f} us, sample {sample_s * 1e3:.2f} ms")
    print(
        f"difflib:   index {dl_build_s * 1e3:.2f} ms, per quote {dl_query_s * 1e6:.1f} us, "
        f"sample {dl_sample_s * 1e3:.2f} ms"
    )
    print(f"speed-up:  per quote {per_quote:.0f}x (goal >= 100x), per sample {per_sample:.1f}x (goal >= 5x)")
    print(f"lengths identical: {mismatches == 0} ({mismatches} mismatches of {len(sam_query)})")
    ok = per_quote >= 100 and per_sample >= 5 and mismatches == 0
    print(
        f"RESULT per_quote_speedup={per_quote:.0f} per_sample_speedup={per_sample:.1f} "
        f"sam_build_ms={build_s * 1e3:.2f} sam_quote_us={query_s * 1e6:.1f} "
        f"difflib_quote_ms={dl_query_s * 1e3:.2f} lengths_identical={mismatches == 0} goals_met={ok}"
    )


if __name__ == "__main__":
    main()
