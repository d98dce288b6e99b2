"""Eval run directories for the report tests, made by the real ``evigraph eval AGENT`` with scripted replies.

Each agent gets a few records chosen so that its view has something to show (a cited entry, a hallucinated span,
a quote in the source, a tie in a ranking) and so that its filters split the records. One input text of every
agent carries :data:`PAYLOAD`, markup that would run if the report ever wrote record text as HTML. Search goes
to :class:`FakeRetriever`, a retrieval server on a local port (no JVM, no index).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

from evigraph.agents.rag_zeval.prompts import assign_letters
from tests.agents.stepgap.doubles import judgement
from tests.cli import scripted_model, write_jsonl

__all__ = ("AGENTS", "FILTERS", "PAYLOAD", "AgentRun", "fake_retriever", "page_data", "predictions", "start_eval")

PAYLOAD = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
"""Record text that runs a script if drawn as markup."""

DOCUMENTS = (
    ("Tower", "Tower was first lit in 1850 by the harbour board."),
    ("Other", "Unrelated </script><!-- text with <b>tags</b>."),
)
"""What the fake retriever returns for every query: ids ``Tower_sentence_0`` and ``Other_sentence_1``."""


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        hits = [
            {"id": f"{title}_sentence_{k}", "title": title, "contents": f"{title}\n{text}", "text": text}
            for k, (title, text) in enumerate(DOCUMENTS[: body["topk"]])
        ]
        answer = json.dumps({"result": [hits for _ in body["queries"]]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_: Any) -> None:  # keep the test output clean
        pass


@contextmanager
def fake_retriever() -> Iterator[str]:
    """A Search-R1-style retrieval server on a free local port; yields its URL."""
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class AgentRun:
    """One eval under way: its run directory and process."""

    agent: str
    out: Path
    process: subprocess.Popen[str]

    def wait(self) -> Path:
        stdout, stderr = self.process.communicate(timeout=300)
        assert self.process.returncode in (0, 1), f"{self.agent} eval failed:\n{stdout}\n{stderr}"
        return self.out


def _veri_r1() -> tuple[list[dict[str, Any]], list[str]]:
    claims = [
        ("v1", f"Tower was first lit in 1850. {PAYLOAD}", "SUPPORTS", ["Tower_sentence_0"]),
        ("v2", "Tower was first lit in 1950.", "REFUTES", ["Tower_sentence_0"]),
        ("v3", "Tower is painted red.", "NOT ENOUGH INFO", []),
        ("v4", "Tower was lit by the harbour board.", "SUPPORTS", ["Other_sentence_1"]),
    ]
    rows = [{"id": i, "claim": c, "label": label, "evidence": ev} for i, c, label, ev in claims]
    replies = [
        "<plan>Find when the Tower was first lit.</plan>\n<search>Tower first lit</search>",
        "<think>The entry gives the year.</think>\n<answer>\nLabel: SUPPORT\nEvidence: [[Tower_sentence_0]]\n</answer>",
    ] * len(rows)
    return rows, replies


def _stepgap() -> tuple[list[dict[str, Any]], list[str]]:
    rows = [
        {"id": "q1", "question": f"When was the Tower first lit? {PAYLOAD}", "golds": ["1850"]},
        {"id": "q2", "question": "Who painted the Tower?", "golds": ["Anna Berg"]},
    ]
    quote = "Tower was first lit in 1850"
    replies = [
        "<think>I need the year.</think>\n<search>Tower first lit</search>",
        "<think>It was first lit in 1850.</think>\n<answer>1850</answer>",
        judgement(found=True, quote=quote),  # q1 step 1: the quote is in the passages → stage D
        judgement(),  # q1 step 2 (conclusion): stage E over step 1's passages
        "<think>I remember the painter.</think>\n<answer>Tom Hale</answer>",
        judgement(off=True, drift="entity_drift"),  # q2: its one step is off target (stage A)
    ]
    return rows, replies


def _rlseek() -> tuple[list[dict[str, Any]], list[str]]:
    source = f"The Eiffel Tower was completed in 1889. It is 330 metres tall. {PAYLOAD}"
    wrong = "The Eiffel Tower is 330 metres tall and was completed in 1899."
    right = "The Eiffel Tower is 330 metres tall."
    rows = [
        {"id": "r1", "task": "summary", "source": source, "response": wrong, "gold": {"spans": [[57, 61]]}},
        {"id": "r2", "task": "summary", "source": source, "response": right, "gold": {"spans": []}},
        {"id": "r3", "task": "summary", "source": source, "response": right, "gold": {"spans": []}},
    ]
    flagged = (
        '## Step 1: Check "completed in 1899"\n- Evidence: <quote>completed in 1889</quote>\n- Evaluation: 1889.\n'
        '## Final Output\n```json\n{"hallucination list": ["1899"]}\n```'
    )
    clean = (
        '## Step 1: Check "330 metres tall"\n- Evidence: <quote>It is 330 metres tall.</quote>\n- Evaluation: same.\n'
        '## Final Output\n```json\n{"hallucination list": []}\n```'
    )
    return rows, [flagged, clean, flagged]


def _seva() -> tuple[list[dict[str, Any]], list[str]]:
    source = f"The bridge was opened to traffic in March 1932 by the mayor of Springfield. {PAYLOAD}"
    rows = [
        {"id": "a", "claim": "The bridge opened in 1932.", "source": source, "label": "Attributable"},
        {"id": "b", "claim": "The bridge opened in 1935.", "source": source, "label": "Not Attributable"},
    ]

    def verdict(claim_span: str, status: str, judgment: str, label: str, **extra: Any) -> str:
        chain = {"claim_part": claim_span, "source_evidence": "opened to traffic in March 1932", "judgment": judgment,
                 "explanation": "Compared the year with the source."}  # fmt: skip
        body = {
            "evidence_alignment": [
                {"claim_span": claim_span, "source_span": "opened to traffic in March 1932", "status": status}
            ],
            "reasoning_chain": [chain, {**chain, "claim_part": "The bridge", "judgment": "supported"}],
            "label": label,
            "confidence": 0.8,
            **extra,
        }
        return json.dumps(body)

    replies = [
        verdict("opened in 1932", "match", "supported", "Attributable"),
        verdict("opened in 1935", "mismatch", "not_supported", "Not Attributable", error_type="temporal_shift",
                fix_suggestion="Say 1932."),
    ]  # fmt: skip
    return rows, replies


def _rag_zeval() -> tuple[list[dict[str, Any]], list[str]]:
    reference = "The bridge over the river opened to traffic in March 1932. It is 503 metres long."
    evidence = "The bridge over the river opened to traffic in March 1932."
    candidates = [{"text": t, "alpha": a} for t, a in (("It opened in March 1932.", 0.0), ("It opened in 1950.", -1.4))]
    question = f"When did the bridge open? {PAYLOAD}"
    rows = [{"id": f"s{k}", "question": question, "reference": reference, "candidates": candidates} for k in range(2)]

    def reply(key: str, labels: list[list[bool]]) -> str:
        items = [
            {"id": letter, "answer": "...", "atomic_claims": [
                {"claim": f"claim {k}", "is_supported": ok, "grounding_evidence": [evidence] if ok else [],
                 "analysis": "compared with the context"} for k, ok in enumerate(labels[i])]}
            for i, letter in enumerate(assign_letters(2, seed=0, key=key))
        ]  # fmt: skip
        return json.dumps(sorted(items, key=lambda item: item["id"]))

    return rows, [reply("s0", [[True], [False]]), reply("s1", [[True], [True]])]


AGENTS = {"veri-r1": _veri_r1, "stepgap": _stepgap, "rlseek": _rlseek, "seva": _seva, "rag-zeval": _rag_zeval}
"""Agent → its records and scripted replies."""
SEARCHES = {"veri-r1", "stepgap"}


def start_eval(agent: str, tmp: Path, retriever_url: str) -> AgentRun:
    """Start ``evigraph eval AGENT`` over the agent's records (one at a time, so the replies meet them in order)."""
    rows, replies = AGENTS[agent]()
    folder = tmp / agent
    folder.mkdir(parents=True)
    data = write_jsonl(folder / "data.jsonl", rows)
    model = scripted_model(folder / "replies.json", replies)
    search = ["--retriever-url", retriever_url] if agent in SEARCHES else []
    out = folder / "run"
    command = [sys.executable, "-m", "evigraph.cli.app", "eval", agent, "--data", str(data), "--out", str(out),
               "--model", model, "--concurrency", "1", *search]  # fmt: skip
    env = {"NO_COLOR": "1", "COLUMNS": "200", "EVIGRAPH_CACHE_DIR": str(tmp / "cache")}
    process = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    return AgentRun(agent, out, process)


def predictions(run: Path) -> list[dict[str, Any]]:
    """The lines of a run's ``predictions.jsonl``."""
    return [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def page_data(page: str) -> dict[str, Any]:
    """The records a report page embeds (its ``report-data`` JSON)."""
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, flags=re.S)
    assert found, "the page embeds no report data"
    return json.loads(found[1])


def _flagged(line: dict[str, Any]) -> bool:
    return any(item.strip() for item in line["output"]["raw_list"])


def _ranked_right(line: dict[str, Any]) -> bool:
    scores = [Fraction(c["supported"], c["total"]) if c["total"] else Fraction(0) for c in line["output"]["candidates"]]
    alphas = line["gold"]["alphas"]
    pairs = [(i, j) for i in range(len(alphas)) for j in range(len(alphas)) if alphas[i] > alphas[j]]
    return all(scores[i] > scores[j] for i, j in pairs)


FILTERS: dict[str, list[tuple[str, str, Callable[[dict[str, Any]], bool]]]] = {
    "veri-r1": [
        ("gold label", "REFUTE", lambda line: line["gold"]["label"] == "REFUTE"),
        ("correct", "no", lambda line: line["output"]["label"] != line["gold"]["label"]),
        ("correct", "yes", lambda line: line["output"]["label"] == line["gold"]["label"]),
    ],
    "stepgap": [
        ("correct", "yes", lambda line: line["output"]["em"] == 1),
        ("correct", "no", lambda line: line["output"]["em"] == 0),
        ("label", "CC", lambda line: "CC" in [s["label"] for s in line["output"]["checks"]["steps"]]),
        ("repair", "re-search", lambda line: "re-search" in [s["repair"] for s in line["output"]["checks"]["steps"]]),
    ],
    "rlseek": [
        ("gold label", "hallucinated", lambda line: bool(line["gold"]["spans"])),
        ("correct", "no", lambda line: _flagged(line) != bool(line["gold"]["spans"])),
        ("label", "faithful", lambda line: not _flagged(line)),
    ],
    "seva": [
        ("error type", "temporal_shift", lambda line: line["output"]["error_type"] == "temporal_shift"),
        ("correct", "yes", lambda line: line["output"]["label"] == line["gold"]["label"]),
    ],
    "rag-zeval": [
        ("correct", "no", lambda line: not _ranked_right(line)),
        ("correct", "yes", _ranked_right),
    ],
}
"""Agent → filters to try: ``(filter, value, which prediction lines it must keep)``, read from the lines alone."""
