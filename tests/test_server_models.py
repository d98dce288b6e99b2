"""A model behind an OpenAI-compatible server, end to end (issue 30, points 3 and 4), against the local fake of
``vllm serve``: ``verify --logprobs --json`` reports the label's confidence from the server's logprobs and token
ids, and a reply that cannot be parsed names the setting that would guide the model -- on the CLI and in
``Verification.hint`` -- only where the backend could have guided it and was not asked to."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from evigraph.cli.app import build_app, run
from evigraph.embed.verifier import Verifier
from evigraph.generators.guidance import CLI_FLAG, guidance_hint, reply_unparsed
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.trajectory import Evidence
from tests.generators.fake_openai_server import FakeOpenAIServer

CLAIM = "The tower was first lit in 1852."
SOURCE = "The tower on the island was first lit in 1852 and rebuilt in 1901."
ANSWER = "<think>It says 1852.</think>\n<answer>\nLabel: SUPPORT\nEvidence: [[Tower_sentence_0]]\n</answer>"
VERIFY_REPLIES = ["<plan>Find the year.</plan>\n<search>tower first lit</search>", ANSWER]
RAMBLING = "I think the claim is probably true, the tower is old."


class InMemorySearch:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [Evidence(id="Tower_sentence_0", text=SOURCE)][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr("evigraph.tools.search.open_search", lambda **flags: InMemorySearch())
    monkeypatch.chdir(tmp_path)  # no evigraph.toml of the developer's
    for name in ("EVIGRAPH_MODEL", "EVIGRAPH_CONFIG", "EVIGRAPH_GENERATOR__CONSTRAINED", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def _spec(server: FakeOpenAIServer) -> str:
    return f"openai:{server.model}@{server.base_url}"


def _invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(argv, application=build_app(), prog_name="evigraph")
    out, err = capsys.readouterr()
    return code, out, err


# -- point 3: the server's logprobs become a confidence ---------------------------------------------------------
def test_verify_logprobs_json_reports_the_label_confidence_from_the_server(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(VERIFY_REPLIES)
    code, out, err = _invoke(["verify", CLAIM, "--model", _spec(server), "--logprobs", "--json"], capsys)
    assert code == 0, out + err
    trajectory = json.loads(out)
    assert all(body["return_tokens_as_token_ids"] for body in server.bodies)
    policy = [s for s in trajectory["segments"] if s["origin"] == "policy"]
    assert policy and all(s["token_ids"] and len(s["logprobs"]) == len(s["token_ids"]) for s in policy)
    # The fake gives token i the logprob -0.1 * (i % 5 + 1); the label starts in the token " SUPPORT".
    index = re.findall(r"\s*\S+", ANSWER).index(" SUPPORT")
    assert trajectory["output"]["confidence"] == pytest.approx(math.exp(-0.1 * (index % 5 + 1)))
    assert trajectory["timing"]["generated_tokens"] == sum(len(s["token_ids"]) for s in policy)
    assert "logprobs" not in err  # nothing lost, nothing said


def test_verify_against_a_server_without_logprobs_says_so_once(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(VERIFY_REPLIES)
    server.logprobs_support = "none"
    code, out, err = _invoke(["verify", CLAIM, "--model", _spec(server), "--logprobs", "--json"], capsys)
    assert code == 0, out + err
    assert json.loads(out)["output"]["confidence"] is None
    shown = " ".join(err.split())  # the CLI logs through rich on stderr, wrapped to the terminal
    assert shown.count("returned no logprobs") == 1, err  # two turns, one warning
    assert server.base_url in shown.replace(" ", "") and "confidences are not computed" in shown


# -- point 4: an unparseable reply names the setting ------------------------------------------------------------
def test_an_unparseable_reply_names_the_flag(server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]) -> None:
    server.script(lambda _messages: RAMBLING)
    code, out, err = _invoke(["verify", CLAIM, "--model", _spec(server)], capsys)
    assert code == 0, out + err
    assert "no label (unparseable answer)" in out
    shown = " ".join(out.split())
    assert CLI_FLAG in shown and "could not be parsed" in shown
    # With --json the hint goes to stderr, so stdout stays one JSON document.
    code, out, err = _invoke(["verify", CLAIM, "--model", _spec(server), "--json"], capsys)
    assert json.loads(out)["output"]["label"] is None and CLI_FLAG in " ".join(err.split())


def test_no_hint_when_the_model_was_guided_or_the_reply_parsed(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(lambda _messages: RAMBLING)  # scripted replies ignore the grammar: still unparseable
    _, out, err = _invoke(["verify", CLAIM, "--model", _spec(server), "--generator.constrained"], capsys)
    assert "no label (unparseable answer)" in out and CLI_FLAG not in out + err
    server.script(VERIFY_REPLIES)
    _, out, err = _invoke(["verify", CLAIM, "--model", _spec(server)], capsys)
    assert "Label: SUPPORT" in out and CLI_FLAG not in out + err


def test_verifier_names_the_python_setting(server: FakeOpenAIServer) -> None:
    server.script(lambda _messages: "not a verdict")
    verifier = Verifier("seva", model=_spec(server))
    verdict = verifier.verify({"claim": CLAIM, "source": SOURCE})
    assert verdict.detail["parse_ok"] is False and not verdict.passed and verdict.error is None
    assert verdict.hint is not None and "guided=True" in verdict.hint and "could not be parsed" in verdict.hint
    guided = Verifier("seva", model=_spec(server), guided=True).verify({"claim": CLAIM, "source": SOURCE})
    assert guided.hint is None  # guided and still unparsed: the setting would not help


def test_no_hint_for_a_backend_that_cannot_guide() -> None:
    scripted = ScriptedGenerator(["not a verdict"] * 4)
    verdict = Verifier("seva", model=scripted).verify({"claim": CLAIM, "source": SOURCE})
    assert verdict.detail["parse_ok"] is False and verdict.hint is None


@pytest.mark.parametrize(
    ("output", "unparsed"),
    [
        ({"parse_ok": False, "label": "Attributable"}, True),
        ({"parse_ok": True, "label": None}, False),
        ({"parse_mode": "failed"}, True),
        ({"parse_mode": "json"}, False),
        ({"label": None, "answered": False}, True),
        ({"label": "SUPPORT"}, False),
        ({"answer": None}, True),
        ({"steps": []}, False),
        (None, False),
    ],
)
def test_reply_unparsed_reads_the_fields_agents_share(output: object, unparsed: bool) -> None:
    assert reply_unparsed(output) is unparsed


def test_the_hint_needs_a_backend_that_guides_and_the_mode_off(server: FakeOpenAIServer) -> None:
    from evigraph.generators import OpenAICompatibleGenerator

    generator = OpenAICompatibleGenerator(server.base_url, server.model)
    unparsed = {"parse_ok": False}
    assert guidance_hint(generator, unparsed) is not None
    assert guidance_hint(generator, {"parse_ok": True}) is None
    assert guidance_hint(ScriptedGenerator(["x"]), unparsed) is None
    generator.constrained = True
    assert guidance_hint(generator, unparsed) is None
