from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from evigraph.evaluation.plots import ReliabilityBin, confusion_plot, per_class_bars, reliability_plot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    assert not path.with_name(path.name + ".tmp").exists()


CONFUSION = {
    "SUPPORTED": {"SUPPORTED": 40, "REFUTED": 5, "NEI": 3, "invalid": 1},
    "REFUTED": {"SUPPORTED": 4, "REFUTED": 30},
    "NEI": {},  # a gold class with no examples
}


def test_confusion_plot(tmp_path: Path) -> None:
    path = confusion_plot(CONFUSION, tmp_path / "plots" / "confusion.png", title="Veri-R1 on FEVER dev")
    assert path == tmp_path / "plots" / "confusion.png"
    assert_png(path)


def test_confusion_plot_explicit_orders_and_zero_counts(tmp_path: Path) -> None:
    zeros = {"a": {"a": 0, "b": 0}, "b": {"a": 0, "b": 0}}
    assert_png(
        confusion_plot(zeros, tmp_path / "z.png", title="zeros", gold_order=["b", "a"], pred_order=["a", "b", "c"])
    )
    assert_png(confusion_plot({}, tmp_path / "empty.png", title="empty"))


def test_confusion_plot_replaces_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "c.png"
    path.write_bytes(b"old")
    assert_png(confusion_plot(CONFUSION, path, title="again"))


def test_per_class_bars(tmp_path: Path) -> None:
    per_class = {
        "SUPPORTED": {"precision": 0.9, "recall": 0.8, "f1": 0.85},
        "REFUTED": {"precision": float("nan"), "recall": 0.0, "f1": 0.0},  # never predicted
        "NEI": {},  # empty class
    }
    assert_png(per_class_bars(per_class, ["precision", "recall", "f1"], tmp_path / "bars.png", title="per class"))
    assert_png(per_class_bars({}, ["f1"], tmp_path / "none.png", title="empty"))
    assert_png(per_class_bars({"a": {"f1": 1.0}}, [], tmp_path / "nometric.png", title="no metrics"))


def test_reliability_plot(tmp_path: Path) -> None:
    bins = [(i / 10, (i + 1) / 10, min(1.0, i / 10 + 0.05), 0 if i < 3 else 10 * i) for i in range(10)]
    assert_png(reliability_plot(bins, tmp_path / "rel.png", title="calibration"))
    models = [
        ReliabilityBin(lower=0.5, upper=1.0, accuracy=0.7, n=12),
        ReliabilityBin(lower=0, upper=0.5, accuracy=0, n=0),
    ]
    assert_png(reliability_plot(models, tmp_path / "rel2.png", title="models"))
    assert_png(reliability_plot([(0.0, 1.0, 0.0, 0)], tmp_path / "rel3.png", title="all empty"))
    assert_png(reliability_plot([], tmp_path / "rel4.png", title="no bins"))


def test_reliability_bin_validates() -> None:
    with pytest.raises(ValueError, match="accuracy"):
        ReliabilityBin(lower=0, upper=0.1, accuracy=1.5, n=1)


def test_importing_the_package_does_not_import_matplotlib_or_rich() -> None:
    code = "import sys, evigraph.evaluation; print(any(m.split('.')[0] in ('matplotlib', 'rich') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "False"
