"""The five one-shot verbs behave alike (issue 25): one convention for text inputs (``TEXT``, ``@FILE``, ``-``),
``--help`` readable at 80 columns with no flag the verb cannot use, untrusted text printed as text (rich markup in
inputs and model replies shows as written), and one line saying so when the model is the embedded plumbing one.

The verbs run in-process on scripted models; search is an in-memory tool (no JVM)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evigraph.agents.rag_zeval.prompts import assign_letters, content_key
from evigraph.cli.app import agent_cli_command, build_app, run
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.registry import load_agents
from evigraph.trajectory import Evidence
from tests.agents.stepgap.doubles import judgement

MARKUP = "[bold]x[/] [/]"
"""Rich markup that would raise (an unmatched ``[/]``) or vanish if any text were printed as markup."""
CLAIM = f"The tower was first lit in 1852 {MARKUP}."
SOURCE = f"The tower on the island was first lit in 1852 and rebuilt in 1901. {MARKUP}"
QUESTION = f"When was the tower first lit? {MARKUP}"
ANSWERS = [f"In 1852 {MARKUP}.", "In 1950."]
TRACE = {
    "question": QUESTION,
    "steps": [
        {"reasoning": f"Look it up {MARKUP}.", "query": "tower first lit", "evidence": [{"id": "t", "text": SOURCE}]},
        {"reasoning": "So 1852.", "answer": f"1852 {MARKUP}"},
    ],
}


class InMemorySearch:
    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [Evidence(id="Tower_sentence_0", text=SOURCE)][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


def _rank_reply() -> str:
    letters = assign_letters(2, seed=0, key=content_key(QUESTION, ANSWERS))
    items = [
        {"id": letter, "answer": "...", "atomic_claims": [
            {"claim": f"claim {MARKUP}", "is_supported": i == 0, "grounding_evidence": [SOURCE[:40]] if i == 0 else [],
             "analysis": "compared"}]}
        for i, letter in enumerate(letters)
    ]  # fmt: skip
    return json.dumps(sorted(items, key=lambda item: item["id"]))


SEVA_REPLY = json.dumps({
    "evidence_alignment": [{"claim_span": f"lit in 1852 {MARKUP}", "source_span": "first lit in 1852",
                            "status": "match"}],
    "reasoning_chain": [{"claim_part": "lit in 1852", "source_evidence": "first lit in 1852", "judgment": "supported",
                         "explanation": f"The same year {MARKUP}."}],
    "label": "Attributable", "confidence": 0.8, "error_type": "numerical_error", "fix_suggestion": f"none {MARKUP}",
})  # fmt: skip
RLSEEK_REPLY = (
    f'## Step 1: Check "1852 {MARKUP}"\n- Evidence: <quote>first lit in 1852</quote>\n- Evaluation: fine.\n'
    f'## Final Output\n```json\n{{"hallucination list": ["{MARKUP}"]}}\n```'
)
VERIFY_REPLIES = [
    f"<plan>Find the year {MARKUP}.</plan>\n<search>tower first lit</search>",
    f"<think>It says 1852 {MARKUP}.</think>\n<answer>\nLabel: SUPPORT\nEvidence: [[Tower_sentence_0]]\n</answer>",
]


@dataclass(frozen=True)
class Verb:
    """How to run one verb on tiny inputs: its words and arguments (given a folder), its model's replies, and
    its text inputs (flag → the argument that holds it, for the input convention tests)."""

    args: Callable[[Path], list[str]]
    replies: list[str]
    inputs: tuple[str, ...]
    model_flag: str = "--model"


def _file(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text, encoding="utf-8")
    return str(tmp / name)


VERBS: dict[str, Verb] = {
    "verify": Verb(lambda tmp: ["verify", CLAIM], VERIFY_REPLIES, ("CLAIM",)),
    "check": Verb(
        lambda tmp: ["check", _file(tmp, "trace.json", json.dumps(TRACE))],
        [judgement(), judgement()],
        ("TRACE",),
        model_flag="--judge",
    ),
    "detect": Verb(
        lambda tmp: ["detect", "--source", SOURCE, "--response", CLAIM], [RLSEEK_REPLY] * 2, ("--source", "--response")
    ),
    "attribute": Verb(
        lambda tmp: ["attribute", "--claim", CLAIM, "--source", SOURCE], [SEVA_REPLY] * 2, ("--claim", "--source")
    ),
    "rank": Verb(
        lambda tmp: ["rank", "--question", QUESTION, "--reference", SOURCE, "--responses", *ANSWERS],
        [_rank_reply()] * 2,
        ("--question", "--reference", "--responses"),
    ),
}


def _invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(argv, application=build_app(), prog_name="evigraph")
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def in_memory_search(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evigraph.tools.search.open_search", lambda **flags: InMemorySearch())


def _scripted(tmp: Path, replies: list[str]) -> str:
    path = tmp / "replies.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def _with_input(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with the value of ``flag`` (the positional for CLAIM/TRACE; the first of --responses) replaced."""
    if flag in ("CLAIM", "TRACE"):
        return [argv[0], value, *argv[2:]]
    index = argv.index(flag) + 1
    return [*argv[:index], value, *argv[index + 1 :]]


# -- untrusted text ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", VERBS)
def test_markup_in_inputs_and_replies_prints_as_written(
    verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = VERBS[verb]
    code, out, err = _invoke([*case.args(tmp_path), case.model_flag, _scripted(tmp_path, case.replies)], capsys)
    assert code == 0, out + err
    assert "Traceback" not in err and MARKUP in out  # the unmatched [/] would raise if read as markup
    assert "plumbing" not in out + err  # a scripted model is not the embedded one


def test_each_verb_says_what_it_concluded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The verdict and its parts, per verb (the renderings, read as text)."""
    seen = {}
    for verb, case in VERBS.items():
        code, out, _ = _invoke([*case.args(tmp_path), case.model_flag, _scripted(tmp_path, case.replies)], capsys)
        assert code == 0, out
        seen[verb] = [" ".join(line.split()) for line in out.splitlines()]
    assert f"plan Find the year {MARKUP}." in seen["verify"] and "search tower first lit" in seen["verify"]
    assert any(line.startswith("result cited [[Tower_sentence_0]]: The tower") for line in seen["verify"])
    assert "Label: SUPPORT" in seen["verify"]
    # SEVA: an Attributable verdict shows no error type, though the reply named one.
    assert seen["attribute"][0] == "Attributable (confidence 0.80)" and not any(
        "numerical" in x for x in seen["attribute"]
    )
    assert f"lit in 1852 {MARKUP} first lit in 1852 match [28, 45)" in seen["attribute"]
    start = CLAIM.index(MARKUP)
    assert f"1. [{start}, {start + len(MARKUP)}) “{MARKUP}”" in seen["detect"]
    assert "quote “first lit in 1852” source [28, 45)" in seen["detect"]
    assert "1 answer 1 (shown as " in " ".join(seen["rank"]) and "(tie)" not in " ".join(seen["rank"])
    assert (
        f"1 Look it up {MARKUP}. no-gap none 1.00" in seen["check"] and "2 So 1852. IE re-search 0.90" in seen["check"]
    )
    assert "E (earlier evidence entails claim): no earlier evidence entails the claim" in seen["check"]


def test_detect_highlights_the_spans_in_the_response(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from evigraph.agents.rlseek import hooks
    from evigraph.agents.rlseek.data import RLSeekRecord
    from evigraph.agents.rlseek.schemas import DetectedSpan, RLSeekOutput

    recorder = Console(record=True, force_terminal=True, color_system="standard", width=100)
    monkeypatch.setattr(hooks, "console", recorder)
    record = RLSeekRecord(id="x", task="summary", source="The tower.", response="It was lit in 1899 [b].")
    span = DetectedSpan(start=14, end=18, text="1899")
    hooks._show(RLSeekOutput(task="summary", spans=(span,), parse_ok=True), record)
    shown = recorder.export_text(styles=True)
    highlighted = shown.index("1899")
    assert "\x1b[" in shown[highlighted - 12 : highlighted] and "[b]" in shown  # styled, the brackets kept
    assert "no quote: no step that names this span quoted the source" in shown


def test_rank_marks_tied_answers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    letters = assign_letters(2, seed=0, key=content_key(QUESTION, ANSWERS))
    tied = json.dumps([
        {"id": letter, "answer": "...", "atomic_claims": [{"claim": "c", "is_supported": True,
                                                           "grounding_evidence": [], "analysis": "a"}]}
        for letter in sorted(letters)
    ])  # fmt: skip
    code, out, _ = _invoke([*VERBS["rank"].args(tmp_path), "--model", _scripted(tmp_path, [tied])], capsys)
    assert code == 0, out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert [line.split(" (shown")[0] for line in lines if "(tie)" in line] == ["1 (tie) answer 1", "1 (tie) answer 2"]


def test_attribute_shows_the_error_type_of_a_not_attributable_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = json.dumps({**json.loads(SEVA_REPLY), "label": "Not Attributable"})
    code, out, _ = _invoke([*VERBS["attribute"].args(tmp_path), "--model", _scripted(tmp_path, [reply])], capsys)
    assert code == 0, out
    shown = " ".join(out.split())
    assert shown.startswith(f"Not Attributable (confidence 0.80) · error: numerical_error · fix: none {MARKUP}")


# -- the plumbing model -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", VERBS)
def test_on_the_embedded_model_each_verb_says_it_is_a_plumbing_model(
    verb: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = VERBS[verb]
    made: list[Any] = []

    def make_generator(config: Any) -> ScriptedGenerator:  # the spec says smollm2; no model loads in a test
        made.append(config.model)
        return ScriptedGenerator(list(case.replies), name="smollm2 (scripted)")

    monkeypatch.setattr("evigraph.generators.factory.make_generator", make_generator)
    code, out, err = _invoke([*case.args(tmp_path), case.model_flag, "smollm2"], capsys)
    assert code == 0 and made == ["smollm2"], out + err
    notes = [line for line in out.splitlines() if "plumbing model" in line]
    assert len(notes) == 1 and case.model_flag in notes[0] and "not a real verifier" in notes[0], out
    code, out, err = _invoke([*case.args(tmp_path), case.model_flag, "smollm2", "--json"], capsys)
    assert code == 0 and json.loads(out) and "plumbing model" in err  # stdout stays JSON


# -- the input convention -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("verb", "flag"), [(v, f) for v, case in VERBS.items() for f in case.inputs])
def test_every_text_input_takes_text_a_file_or_stdin(
    verb: str, flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = VERBS[verb]
    argv = [*case.args(tmp_path), case.model_flag, _scripted(tmp_path, case.replies)]
    value = argv[1] if flag in ("CLAIM", "TRACE") else argv[argv.index(flag) + 1]
    if flag == "TRACE":
        value = Path(value).read_text(encoding="utf-8")
    argv.append("--json")

    def concluded(given: str) -> Any:
        code, out, err = _invoke(_with_input(argv, flag, given), capsys)
        assert code == 0, err
        body = json.loads(out)
        return body.get("output", body)  # a trajectory's output; check prints its checks

    expected = concluded(value)  # as text; then from a file, then from stdin: the same conclusion
    (tmp_path / "input.txt").write_text(value, encoding="utf-8")
    assert concluded(f"@{tmp_path / 'input.txt'}") == expected
    monkeypatch.setattr("sys.stdin", io.StringIO(value))
    assert concluded("-") == expected
    # A missing @FILE names the input and the file.
    code, _, err = _invoke(_with_input(argv, flag, f"@{tmp_path / 'missing.txt'}"), capsys)
    assert code == 2 and f"{flag}: no such file: {tmp_path / 'missing.txt'}" in err, err


@pytest.mark.parametrize("verb", [v for v, case in VERBS.items() if len(case.inputs) > 1])
def test_only_one_input_may_read_stdin(verb: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = VERBS[verb]
    argv = case.args(tmp_path)
    for flag in case.inputs[:2]:
        argv = _with_input(argv, flag, "-")
    code, _, err = _invoke(argv, capsys)
    assert code == 2 and f"{case.inputs[0]} and {case.inputs[1]} read standard input" in err, err


def test_rank_answers_and_check_traces_still_read_bare_file_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [_file(tmp_path, f"{n}.txt", text) for n, text in enumerate(ANSWERS)]
    code, out, _ = _invoke(
        ["rank", "--question", QUESTION, "--reference", SOURCE, "--responses", *paths, "--model",
         _scripted(tmp_path, [_rank_reply()])],
        capsys,
    )  # fmt: skip
    assert code == 0 and f"{paths[0]}: {ANSWERS[0]}" in out, out
    code, _, err = _invoke(["rank", "--question", "Q", "--reference", "R", "--responses", "a.txt", "b.txt"], capsys)
    assert code == 2 and "--responses: no such file: a.txt" in err  # a mistyped name is not checked as text


# -- help and flags ---------------------------------------------------------------------------------------------
def _commands() -> list[tuple[list[str], Any]]:
    agents, _ = load_agents()
    found = []
    for spec in agents.values():
        agent = spec.load()
        for hook in sorted(agent.hooks):
            words = [spec.verb] if hook == "run" and spec.verb else [hook, spec.name]
            found.append((words, agent_cli_command(agent, hook)))
    return found


@pytest.mark.parametrize(("words", "command"), _commands(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_help_fits_80_columns_with_every_flag_whole(
    words: list[str], command: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = _invoke([*words, "--help"], capsys)
    assert code == 0, out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
    for param in command.params:
        for flag in (*param.opts, *param.secondary_opts):
            if flag.startswith("--"):
                assert (flag in out) != bool(getattr(param, "hidden", False)), f"{' '.join(words)} --help: {flag}"


def test_verbs_list_no_flag_they_cannot_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    helps = {}
    for verb in VERBS:
        _, helps[verb], _ = _invoke([verb, "--help"], capsys)
    for flag in ("--generator.max-new-tokens", "--max-searches", "--repair-budget"):
        assert flag not in helps["check"]
    assert "--generator.constrained" in helps["check"]  # it switches the judge's weak-model guide
    assert "--judge" in helps["check"] and "Judge model" in helps["check"] and "--offline" not in helps["verify"]
    for verb in ("verify", "detect", "attribute", "rank"):
        assert "TEXT|@FILE|-" in helps[verb] or "TEXT, @FILE or -" in helps[verb], verb
    code, _, err = _invoke(["verify", CLAIM, "--offline"], capsys)
    assert code == 2 and "--offline: not used by this command: verify runs online" in err
    code, _, err = _invoke([*VERBS["check"].args(tmp_path), "--max-searches", "2"], capsys)
    assert code == 2 and "--max-searches: not used by this command" in err


# -- the trace format ------------------------------------------------------------------------------------------
def test_check_prints_the_trace_schema_generated_from_its_reader(capsys: pytest.CaptureFixture[str]) -> None:
    from evigraph.agents.stepgap.schemas import Trace

    code, out, _ = _invoke(["check", "--schema"], capsys)  # no TRACE needed
    assert code == 0
    schema = json.loads(out)
    forms = {ref["$ref"].split("/")[-1] for ref in schema["anyOf"]}
    assert forms == {"Trace", "TranscriptTrace"}
    assert schema["$defs"]["Trace"]["required"] == ["question", "steps"]
    assert schema["$defs"]["TranscriptTrace"]["required"] == ["question", "response"]
    step = schema["$defs"]["TraceStep"]
    assert "required" not in step and set(step["properties"]) >= {"reasoning", "query", "evidence", "answer"}
    assert step["properties"]["query"]["description"].startswith("``q_i``")
    assert schema["$defs"]["Trace"]["properties"].keys() == Trace.model_json_schema()["properties"].keys()


def test_check_reads_a_transcript_trace_and_names_a_bad_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = {
        "question": "Who directed Jaws?",
        "response": "<think>Need the director.</think><search>Jaws director</search><information>Doc 1(Title: Jaws) "
        "Directed by Steven Spielberg.</information><think>Spielberg.</think><answer>Steven Spielberg</answer>",
    }
    model = _scripted(tmp_path, [judgement(), judgement()])
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(transcript)))
    code, out, _ = _invoke(["check", "-", "--judge", model, "--json"], capsys)
    assert code == 0 and [s["kind"] for s in json.loads(out)["steps"]] == ["inference", "conclusion"]
    code, _, err = _invoke(["check", json.dumps({"question": "Q?", "response": ""}), "--judge", model], capsys)
    assert code == 2 and "TRACE:1: " in err and "response" in err
    code, _, err = _invoke(["check", "[1, 2]", "--judge", model], capsys)
    assert code == 2 and "expected one JSON object" in err and "--schema" in err
