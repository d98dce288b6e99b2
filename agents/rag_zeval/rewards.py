"""RAG-Zeval's reward components (specs/rag-zeval.md §3), pure functions of their arguments.

- :func:`format_reward` ``r_f ∈ {0, -0.5}`` from the format gate's findings (:func:`.parsing.format_problems`);
- :func:`evidence_score` / :func:`evidence_reward` ``r_e ∈ [0, 1]``: each evidence string's longest common
  *contiguous* token run with the reference over its own length, 0 below ``min_tokens`` tokens, averaged;
- :func:`ranking_accuracy` ``r_a ∈ {0, 1}`` (the full ranking, ties fail) and :func:`top1_accuracy` (the
  "predict the best" ablation, §3.4);
- :func:`combined_reward` ``r ∈ {-0.5, 0} ∪ [1, 1.5]`` (§3.5).

Scores are compared exactly: pass :class:`fractions.Fraction` (``supported / total``) so that 1/3 and 2/6 tie.

**Tokenizer** (O2): :func:`evigraph.tools.lcs.word_tokens`, the regex ``\\w+|[^\\w\\s]`` -- a run of Unicode word
characters or one punctuation/symbol character; whitespace separates and is dropped; case-sensitive. So
``"US $499."`` is 4 tokens (``US``, ``$``, ``499``, ``.``) and ``"20-GB"`` is 3. Any other tokenizer (a policy
tokenizer's ids) can be passed as ``tokenize``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from itertools import combinations

from evigraph.tools.lcs import SuffixAutomaton, word_tokens

__all__ = (
    "FORMAT_FAILURE",
    "MIN_EVIDENCE_TOKENS",
    "combined_reward",
    "evidence_reward",
    "evidence_score",
    "format_reward",
    "ranking_accuracy",
    "regex_tokens",
    "top1_accuracy",
)

FORMAT_FAILURE = -0.5
MIN_EVIDENCE_TOKENS = 10
"""Evidence shorter than this many tokens scores 0 (§3.2)."""

Score = Fraction | float
Tokenize = Callable[[str], Sequence[Hashable]]


def regex_tokens(text: str) -> list[str]:
    """The default evidence tokenizer: :func:`~evigraph.tools.lcs.word_tokens`' texts."""
    return [token.text for token in word_tokens(text)]


def format_reward(problems: Sequence[str]) -> float:
    """``0`` when the format gate found nothing, else ``-0.5`` (§3.1: all or nothing)."""
    return 0.0 if not problems else FORMAT_FAILURE


def evidence_score(
    evidence: Sequence[Hashable], reference: SuffixAutomaton[Hashable], *, min_tokens: int = MIN_EVIDENCE_TOKENS
) -> float:
    """``LCSubstr(e, c) / |e|`` over tokens, 0 when ``|e| < min_tokens`` (§3.2). ``reference`` is the
    automaton of the reference's tokens (build it once per trajectory)."""
    if len(evidence) < max(min_tokens, 1):
        return 0.0
    return reference.longest_common_substring(evidence).length / len(evidence)


def evidence_reward(
    evidence: Sequence[str],
    reference: str,
    *,
    min_tokens: int = MIN_EVIDENCE_TOKENS,
    tokenize: Tokenize = regex_tokens,
) -> float:
    """Mean :func:`evidence_score` over every evidence string of a trajectory; 0 when there is none (§3.2)."""
    if not evidence:
        return 0.0
    automaton: SuffixAutomaton[Hashable] = SuffixAutomaton(list(tokenize(reference)))
    return sum(evidence_score(list(tokenize(e)), automaton, min_tokens=min_tokens) for e in evidence) / len(evidence)


def _checked(scores: Sequence[Score], alphas: Sequence[float]) -> None:
    if len(scores) != len(alphas):
        raise ValueError(f"{len(scores)} scores for {len(alphas)} candidates")
    if len(set(alphas)) != len(alphas):
        raise ValueError(f"alphas must be distinct, got {list(alphas)}")


def ranking_accuracy(scores: Sequence[Score], alphas: Sequence[float]) -> int:
    """1 iff every pair with ``alpha_i > alpha_j`` has ``S_i > S_j`` strictly (§3.3); ties fail."""
    _checked(scores, alphas)
    for i, j in combinations(range(len(scores)), 2):
        better, worse = (i, j) if alphas[i] > alphas[j] else (j, i)
        if not scores[better] > scores[worse]:
            return 0
    return 1


def top1_accuracy(scores: Sequence[Score], alphas: Sequence[float]) -> int:
    """1 iff the candidate with the largest alpha scores strictly above every other one (§3.4)."""
    _checked(scores, alphas)
    best = max(range(len(alphas)), key=lambda i: alphas[i])
    return int(all(scores[best] > s for i, s in enumerate(scores) if i != best))


def combined_reward(format_value: float, accuracy: int, evidence: float) -> float:
    """§3.5: ``1 + 0.5·r_e`` for a well-formed, correctly ranked rollout; 0 when well-formed but wrong; -0.5
    when the format gate failed (accuracy and evidence then do not matter)."""
    if format_value != 0.0:
        return FORMAT_FAILURE
    return 1.0 + 0.5 * evidence if accuracy else 0.0
