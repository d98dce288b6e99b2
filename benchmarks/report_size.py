"""Size and load time of ``evigraph report`` on a 10,000-record run.

A real Veri-R1 run is made first: ``evigraph eval veri-r1 --offline`` over a few claims with scripted replies
(every claim with three entries in its prompt, an answer citing one). Its prediction lines are then repeated,
with fresh ids, claims and labels, to N records, next to the run's ``run.json``, ``report.json`` and plots: a
synthetic run with real lines. ``evigraph report`` writes its page (time and size measured), and headless
Chromium (``chromium --headless --dump-dom``) loads it: the page sets ``data-ready-ms`` on ``<html>`` once its
first page of records is drawn (milliseconds since navigation started: reading the HTML, parsing the embedded
JSON, building the filters, drawing 25 records). The baseline is the same page drawn eagerly, every record at
once (``#size=all``, what a page without paging would do); the ratio says what paging buys.

    .venv/bin/python benchmarks/report_size.py [--records 10000] [--repeat 3]

Without Chromium on PATH the load times are reported as ``nan``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evigraph.agents.veri_r1.report_view import report_view
from evigraph.report import read_run, render_page

LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")
PREDICTED = ("SUPPORT", "REFUTE", "NOT ENOUGH INFO")
GOLD = {"SUPPORTS": "SUPPORT", "REFUTES": "REFUTE", "NOT ENOUGH INFO": "NOT ENOUGH INFO"}


def _template_run(folder: Path, n: int) -> Path:
    """A real ``evigraph eval veri-r1 --offline`` run over ``n`` claims (scripted replies)."""
    rows = [
        {
            "id": f"t{i}",
            "claim": f"Lighthouse {i} was first lit in {1850 + i} and stands on the north cape of the island.",
            "label": LABELS[i % 3],
            "evidence": [f"Lighthouse {i}_sentence_0"],
            "passages": [
                {"id": f"Lighthouse {i}_sentence_0", "text": f"Lighthouse {i} was first lit in {1850 + i}."},
                {"id": f"Lighthouse {i}_sentence_1", "text": "It stands on the north cape and is painted white."},
                {"id": "Island_sentence_4", "text": "The island has been inhabited since the bronze age."},
            ],
        }
        for i in range(n)
    ]
    data = folder / "claims.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    replies = [
        "<think>The first entry gives the year the lighthouse was first lit, which matches the claim; the second "
        "places it on the north cape.</think><answer>\nLabel: SUPPORT\n"
        f"Evidence: [[Lighthouse {i}_sentence_0]], [[Lighthouse {i}_sentence_1]]\n</answer>"
        for i in range(n)
    ]
    (folder / "replies.json").write_text(json.dumps(replies), encoding="utf-8")
    out = folder / "template"
    command = [sys.executable, "-m", "evigraph.cli.app", "eval", "veri-r1", "--data", str(data), "--out", str(out),
               "--offline", "--model", f"scripted:{folder / 'replies.json'}", "--concurrency", "1"]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, text=True)
    return out


def _synthetic_run(template: Path, out: Path, n: int, seed: int = 0) -> Path:
    """``n`` records made from the template's lines: fresh ids, claims and labels (so every filter splits them)."""
    lines = [json.loads(x) for x in (template / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    out.mkdir()
    for name in ("run.json", "report.json", *(p.name for p in template.glob("*.png"))):
        shutil.copy(template / name, out / name)
    with (out / "predictions.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(n):
            line = json.loads(json.dumps(lines[i % len(lines)]))
            line["id"] = line["trajectory"]["id"] = str(i)
            line["claim"] = line["trajectory"]["input"]["claim"] = f"{line['claim']} (record {i})"
            gold = rng.choice(LABELS)
            line["gold"].update(id=str(i), raw_label=gold, label=GOLD[gold])
            line["output"]["label"] = line["trajectory"]["output"]["label"] = rng.choice(PREDICTED)
            handle.write(json.dumps(line) + "\n")
    return out


def _ready_ms(chromium: str, url: str) -> float:
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = re.search(r'<html[^>]*data-ready-ms="([0-9.]+)"', done.stdout)
    if not found:
        raise RuntimeError("the page never marked itself ready")
    return float(found[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="Page loads per mode (median reported).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        template = _template_run(folder, 30)
        run = _synthetic_run(template, folder / "run", args.records)
        started = time.perf_counter()
        report = read_run(run, report_view)
        page = folder / "report.html"
        page.write_text(render_page(report.page), encoding="utf-8")
        write_s = time.perf_counter() - started
        size_mb = page.stat().st_size / 1e6
        jsonl_mb = (run / "predictions.jsonl").stat().st_size / 1e6
        print(f"{args.records} records: predictions.jsonl {jsonl_mb:.1f} MB, report {size_mb:.1f} MB, "
              f"written in {write_s:.1f} s")  # fmt: skip
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        paged = eager = float("nan")
        if chromium is None:
            print("no chromium on PATH: load times not measured")
        else:
            uri = page.as_uri()
            paged = statistics.median(_ready_ms(chromium, uri) for _ in range(args.repeat))
            eager = statistics.median(_ready_ms(chromium, uri + "#size=all") for _ in range(args.repeat))
            print(f"first page drawn after {paged:.0f} ms (25 records); every record drawn at once: {eager:.0f} ms")
    print(
        f"RESULT size_mb={size_mb:.2f} load_ms={paged:.0f} eager_load_ms={eager:.0f} "
        f"eager_over_paged={eager / paged:.2f} write_s={write_s:.2f} records={args.records}"
    )


if __name__ == "__main__":
    main()
