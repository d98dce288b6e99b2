"""StepGap's label vocabulary (specs/stepgap.md §1.2, §2.6): gap types, repair actions, pipeline-path decisions."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = (
    "GAP_LABELS",
    "GAP_TYPES",
    "REPAIR_ACTIONS",
    "GapLabel",
    "GapType",
    "RepairAction",
    "Stage",
    "StepKind",
    "has_gap",
)

GapLabel = Literal["no-gap", "CC", "IE", "MB"]
"""A step's label: gap-free, Contradicted Claim, Irrelevant Evidence or Missing Bridge."""
GapType = Literal["CC", "IE", "MB"]
RepairAction = Literal["none", "retract", "re-search", "bridging-search"]
Stage = Literal["A", "B", "C", "D", "E"]
StepKind = Literal["inference", "conclusion"]
"""Inference: the step searched (or carries no tag); conclusion: it answered (§1.1)."""

GAP_LABELS: Final[tuple[GapLabel, ...]] = get_args(GapLabel)
GAP_TYPES: Final[tuple[GapType, ...]] = get_args(GapType)
REPAIR_ACTIONS: Final[dict[GapLabel, RepairAction]] = {
    "no-gap": "none",
    "CC": "retract",
    "IE": "re-search",
    "MB": "bridging-search",
}


def has_gap(label: GapLabel) -> bool:
    """The binary view every step metric uses: any gap type is positive."""
    return label != "no-gap"
