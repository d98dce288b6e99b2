"""SEVA's two labels and their aliases (specs/seva.md §3.5): what a reply or a data file may write for them.

Exact lookup after normalisation, never substring matching: "not supported" contains "supported". The labels
live here, not in :mod:`.schemas`, so that the schemas can read aliases without an import circle.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ("ALIASES", "ATTRIBUTABLE", "LABELS", "NOT_ATTRIBUTABLE", "Label", "normalize_label")

ATTRIBUTABLE = "Attributable"
NOT_ATTRIBUTABLE = "Not Attributable"
Label = Literal["Attributable", "Not Attributable"]
LABELS: tuple[Label, ...] = (ATTRIBUTABLE, NOT_ATTRIBUTABLE)

ALIASES: dict[str, Label] = {
    **dict.fromkeys(("attributable", "yes", "true", "entailment", "supported"), ATTRIBUTABLE),
    **dict.fromkeys(("not attributable", "no", "false", "contradiction", "neutral", "not supported"), NOT_ATTRIBUTABLE),
}
_SEPARATORS = re.compile(r"[_\-\s]+")


def normalize_label(value: object) -> Label | None:
    """The canonical label of ``value``: JSON booleans map to their label; a string is lower-cased, ``_``/``-``
    become spaces, runs of spaces collapse, then the alias table decides. Anything else is ``None``."""
    if isinstance(value, bool):
        return ATTRIBUTABLE if value else NOT_ATTRIBUTABLE
    if not isinstance(value, str):
        return None
    return ALIASES.get(_SEPARATORS.sub(" ", value.strip().lower()).strip())
