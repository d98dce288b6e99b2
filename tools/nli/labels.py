"""Which output index of a cross-encoder is which NLI label (specs/stepgap.md §2.5, §9 #7): pure functions.

Checkpoints order their labels differently (``[contradiction, entailment, neutral]``,
``[entailment, neutral, contradiction]``, ...). At start-up the cross-encoder runs two probes,
:data:`PROBE_PAIRS`: an identical pair, whose argmax index is ENTAILMENT, and the same premise with a negated
hypothesis, whose argmax index is CONTRADICTION. :func:`calibrate_label_order` then decides, in this order:

1. **Forced** (``label_order=("entailment", "neutral", "contradiction")``, the label of index 0, 1, 2): used
   as given. Where the probes or ``id2label`` disagree, the disagreement is recorded as a warning.
2. **id2label names the three NLI labels** (case-insensitive, a few spellings such as ``CONTRADICTION`` or
   ``entail``): trusted. The probes are the cross-check; a disagreement is a warning (logged, and shown by
   ``describe()``), not an error -- the names are what the checkpoint was trained on, a probe is one pair.
3. **id2label has no names** (``LABEL_0`` ...): the probes decide, and the remaining index is NEUTRAL. When a
   probe's top score is not unique, or both probes pick the same index (typical of random or broken
   weights), no order can be read off: :class:`~evigraph.errors.ConfigError`, which says to force one.

``id2label`` naming anything else (sentiment labels, two-way NLI, a mix of names and ``LABEL_n``) is refused
whatever the other inputs, because the checkpoint is not a 3-way NLI classifier.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evigraph.errors import ConfigError
from evigraph.tools.nli.results import NLI_LABELS, NLILabel

__all__ = (
    "PROBE_PAIRS",
    "LabelOrder",
    "LabelOrderMethod",
    "calibrate_label_order",
    "parse_id2label",
    "parse_label_order",
)

PROBE_PAIRS: tuple[tuple[str, str], tuple[str, str]] = (
    ("A cat is an animal.", "A cat is an animal."),
    ("A cat is an animal.", "A cat is not an animal."),
)
"""The identical pair (argmax = ENTAILMENT) and the negated pair (argmax = CONTRADICTION)."""

LabelOrderMethod = Literal["forced", "id2label", "probe"]
Labels = tuple[NLILabel, NLILabel, NLILabel]

_NAMES: dict[str, NLILabel] = {
    "entailment": "ENTAILMENT",
    "entails": "ENTAILMENT",
    "entailed": "ENTAILMENT",
    "entail": "ENTAILMENT",
    "neutral": "NEUTRAL",
    "contradiction": "CONTRADICTION",
    "contradicts": "CONTRADICTION",
    "contradict": "CONTRADICTION",
    "contradictory": "CONTRADICTION",
}
_GENERIC = re.compile(r"label_\d+", re.IGNORECASE)
_ACCEPTED = "entailment, neutral, contradiction (any case)"


class LabelOrder(BaseModel):
    """The label of each output index, and how that was decided."""

    model_config = ConfigDict(frozen=True)

    labels: Labels
    """``labels[i]`` is the label of output index ``i``."""
    method: LabelOrderMethod
    probe_entailment_index: int | None
    """Argmax index of the identical-pair probe (``None``: its top score was tied)."""
    probe_contradiction_index: int | None
    """Argmax index of the negated-pair probe (``None``: its top score was tied)."""
    warnings: tuple[str, ...] = ()

    def arrange(self, values: Sequence[float]) -> tuple[float, float, float]:
        """Per-index values reordered to (entailment, neutral, contradiction).

        Example:
            >>> order = calibrate_label_order(("CONTRADICTION", "ENTAILMENT", "NEUTRAL"), [0, 5, 1], [5, 0, 1])
            >>> order.arrange([0.1, 0.7, 0.2])
            (0.7, 0.2, 0.1)
        """
        by_label = dict(zip(self.labels, values, strict=True))
        return by_label["ENTAILMENT"], by_label["NEUTRAL"], by_label["CONTRADICTION"]


def _label_names(names: Sequence[str], *, what: str, source: str) -> Labels:
    labels = [_NAMES.get(str(name).strip().lower()) for name in names]
    if None in labels or sorted(labels) != sorted(NLI_LABELS):  # type: ignore[type-var]
        raise ConfigError(f"{what} {list(names)!r} is not the three NLI labels ({_ACCEPTED})", source=source)
    return tuple(labels)  # type: ignore[return-value]


def parse_label_order(order: Sequence[str], *, source: str = "label_order") -> Labels:
    """A forced order (the label of index 0, 1, 2), checked.

    Raises:
        ConfigError: not a permutation of the three NLI labels.
    """
    if isinstance(order, str) or len(order) != 3:
        raise ConfigError(f"label_order needs three names, the label of index 0, 1, 2; got {order!r}", source=source)
    return _label_names(order, what="label_order", source=source)


def parse_id2label(id2label: Mapping[int, str] | Mapping[str, str], *, source: str) -> Labels | None:
    """The labels a 3-way config's ``id2label`` names, or ``None`` when it names none (``LABEL_0`` ...).

    Raises:
        ConfigError: indices other than 0, 1, 2; names that are not the three NLI labels; names and
            ``LABEL_n`` mixed.
    """
    try:
        by_index = {int(index): str(name) for index, name in id2label.items()}
    except (TypeError, ValueError) as error:
        raise ConfigError(f"id2label has a non-integer index: {dict(id2label)!r}", source=source) from error
    if sorted(by_index) != [0, 1, 2]:
        raise ConfigError(f"id2label must have indices 0, 1, 2; found {dict(id2label)!r}", source=source)
    names = [by_index[i] for i in range(3)]
    if all(_GENERIC.fullmatch(name.strip()) for name in names):
        return None
    return _label_names(names, what="id2label", source=source)


def _argmax(values: Sequence[float]) -> int | None:
    top = max(values)
    winners = [i for i, value in enumerate(values) if value == top]
    return winners[0] if len(winners) == 1 else None


def _cross_check(labels: Labels, entail_at: int | None, contra_at: int | None, against: str) -> list[str]:
    warnings = []
    checks = (("identical-pair", entail_at, "ENTAILMENT"), ("negated-pair", contra_at, "CONTRADICTION"))
    for probe, found, label in checks:
        expected = labels.index(label)
        if found != expected:
            picked = "a tie" if found is None else f"index {found} ({labels[found]} by {against})"
            warnings.append(f"the {probe} probe picked {picked}, not {label}'s index {expected} by {against}")
    return warnings


def calibrate_label_order(
    id2label_labels: Labels | None,
    identical_logits: Sequence[float],
    negated_logits: Sequence[float],
    *,
    forced: Labels | None = None,
) -> LabelOrder:
    """Decide the label of each output index (module docstring: forced, then id2label, then the probes).

    Args:
        id2label_labels: :func:`parse_id2label` of the config (``None``: the config names no labels).
        identical_logits: the model's 3 scores for the identical pair of :data:`PROBE_PAIRS`.
        negated_logits: its 3 scores for the negated pair.
        forced: :func:`parse_label_order` of a user-given order.

    Raises:
        ConfigError: no order given or named, and the probes do not pick two distinct indices.

    Example (the spec's probe, §2.5: logits ``[-2.1, 5.3, -1.0]`` → entailment index 1):
        >>> order = calibrate_label_order(None, [-2.1, 5.3, -1.0], [4.0, -3.0, 0.5])
        >>> order.labels, order.method
        (('CONTRADICTION', 'ENTAILMENT', 'NEUTRAL'), 'probe')
    """
    entail_at, contra_at = _argmax(identical_logits), _argmax(negated_logits)
    probes = {"probe_entailment_index": entail_at, "probe_contradiction_index": contra_at}
    if forced is not None:
        warnings = _cross_check(forced, entail_at, contra_at, "label_order")
        if id2label_labels is not None and id2label_labels != forced:
            warnings.append(f"label_order {list(forced)} overrides the checkpoint's id2label {list(id2label_labels)}")
        return LabelOrder(labels=forced, method="forced", warnings=tuple(warnings), **probes)
    if id2label_labels is not None:
        warnings = _cross_check(id2label_labels, entail_at, contra_at, "id2label")
        return LabelOrder(labels=id2label_labels, method="id2label", warnings=tuple(warnings), **probes)
    if entail_at is None or contra_at is None or entail_at == contra_at:
        raise ConfigError(
            "the checkpoint's id2label names no labels and the probes cannot tell them apart (identical pair "
            f"{list(identical_logits)}, negated pair {list(negated_logits)}): pass "
            "label_order=('entailment', 'neutral', 'contradiction') or the checkpoint's real order",
            source="label_order",
        )
    labels: list[NLILabel] = ["NEUTRAL"] * 3
    labels[entail_at], labels[contra_at] = "ENTAILMENT", "CONTRADICTION"
    return LabelOrder(labels=(labels[0], labels[1], labels[2]), method="probe", **probes)
