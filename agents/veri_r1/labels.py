"""Veri-R1 label vocabularies, gold-label aliases and evidence-id normalisation (spec §1, §2.5, §9 #9).

The policy answers with three labels. Gold files use several spellings (FEVER ``SUPPORTS``, SciFact
``CONTRADICT``, HoVer ``SUPPORTED`` / ``NOT_SUPPORTED``), so gold labels are mapped through one explicit alias
table. HoVer's two-way negative stays its own gold label, ``NOT SUPPORTED``, because it accepts two predicted
labels (REFUTE or NOT ENOUGH INFO).
"""

from __future__ import annotations

import unicodedata
from typing import Literal, get_args

__all__ = (
    "GOLD_LABELS",
    "LABELS",
    "GoldLabel",
    "Label",
    "label_matches",
    "normalize_gold_label",
    "normalize_id",
    "relaxes_evidence",
)

Label = Literal["SUPPORT", "REFUTE", "NOT ENOUGH INFO"]
"""What the policy may answer."""

LABELS: tuple[Label, ...] = get_args(Label)

GoldLabel = Literal["SUPPORT", "REFUTE", "NOT ENOUGH INFO", "NOT SUPPORTED"]
"""Gold labels after alias mapping; ``NOT SUPPORTED`` is HoVer's two-way negative."""

GOLD_LABELS: tuple[GoldLabel, ...] = get_args(GoldLabel)

_ALIASES: dict[str, GoldLabel] = {
    "SUPPORT": "SUPPORT",
    "SUPPORTS": "SUPPORT",
    "SUPPORTED": "SUPPORT",
    "REFUTE": "REFUTE",
    "REFUTES": "REFUTE",
    "CONTRADICT": "REFUTE",
    "NOT ENOUGH INFO": "NOT ENOUGH INFO",
    "NEI": "NOT ENOUGH INFO",
    "NOT SUPPORTED": "NOT SUPPORTED",
    "NOT SUPPORT": "NOT SUPPORTED",
}
"""Keys are in canonical form: upper case, underscores read as spaces, whitespace runs collapsed."""


def _canonical(raw: str) -> str:
    return " ".join(raw.replace("_", " ").split()).upper()


def normalize_gold_label(raw: str) -> GoldLabel:
    """Map a gold label spelling to :data:`GoldLabel`.

    Matching is case-insensitive, ``_`` counts as a space and whitespace runs collapse, so ``not_enough_info``,
    ``Not  Enough Info`` and ``NOT ENOUGH INFO`` are one label.

    Raises:
        ValueError: the spelling is not in the alias table (the message lists the accepted spellings).
    """
    label = _ALIASES.get(_canonical(raw))
    if label is None:
        accepted = ", ".join(sorted(_ALIASES))
        raise ValueError(f"unknown gold label {raw!r}; accepted (any case, '_' or spaces): {accepted}")
    return label


def normalize_id(raw: str) -> str:
    """An evidence id as compared in clean mode: stripped and Unicode-NFC composed.

    Some gold files store ids in decomposed (NFD) form while models emit composed characters; composing both
    sides makes ``Mona\\u0301e`` equal ``Monáe``.
    """
    return unicodedata.normalize("NFC", raw.strip())


def label_matches(pred: Label | None, gold: GoldLabel) -> bool:
    """Whether a predicted label counts as correct for ``gold`` (clean mode).

    Gold ``NOT SUPPORTED`` (HoVer) accepts REFUTE or NOT ENOUGH INFO (spec §9 #9); no label is never correct.
    """
    if pred is None:
        return False
    if gold == "NOT SUPPORTED":
        return pred in ("REFUTE", "NOT ENOUGH INFO")
    return pred == gold


def relaxes_evidence(gold: GoldLabel) -> bool:
    """Whether the evidence condition is dropped for this gold label (NEI relaxation, spec §3.4 and §4)."""
    return gold in ("NOT ENOUGH INFO", "NOT SUPPORTED")
