"""Every flag does what it says (issue 22): each generator flag an agent command accepts reaches the model call,
or the command refuses it with a message; usage errors and empty inputs exit 2 with no traceback, before any
model loads.

The walk goes through the registry: every registered agent, every command it answers (its verb, its own hooks,
the framework's ``eval``/``score``/``reward``), every generator flag the command accepts. A scripted backend
records the :class:`~evigraph.generators.types.SamplingParams` of each call; search is an in-memory tool (no
JVM). A new command that takes generator flags fails :func:`test_every_command_with_generator_flags_has_a_case`
until it gets an input case below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from evigraph.cli.app import agent_cli_command, build_app, run
from evigraph.errors import ConfigError
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.generators.types import SamplingParams
from evigraph.registry import LoadedAgent, load_agents
from evigraph.trajectory import Evidence, Segment
from tests.cli import write_jsonl

# Each flag gets a value no default has, so finding it in a call proves the flag got there.
VALUES: dict[str, tuple[str, str, Any]] = {
    "--generator.max-new-tokens": ("max_new_tokens", "37", 37),
    "--generator.temperature": ("temperature", "0.25", 0.25),
    "--generator.top-p": ("top_p", "0.75", 0.75),
    "--generator.seed": ("seed", "1234", 1234),
}
CONTRACT = ("eval", "score", "reward")


def is_generator_flag(flag: str) -> bool:
    """The ``--generator.*`` sampling flags, and any other token cap (an agent's own, StepGap's judge's, a
    command's)."""
    return flag in VALUES or flag.endswith("max-new-tokens")


def flag_values(flags: list[str]) -> dict[str, tuple[str, str, Any]]:
    """``flag → (SamplingParams field, flag value, expected value)``, the caps other than
    ``--generator.max-new-tokens`` each with a value of its own (41, 42, ...)."""
    caps = (41 + n for n in range(len(flags)))
    return {f: VALUES[f] if f in VALUES else ("max_new_tokens", str(n := next(caps)), n) for f in flags}


# -- doubles ---------------------------------------------------------------------------------------------------
class Recorded:
    """What the commands of one invocation sent to models."""

    def __init__(self) -> None:
        self.generators: list[ScriptedGenerator] = []
        self.observed: list[Any] = []
        """Objects with the sampling fields that reached a model other than through a call (CAD's settings)."""
        self.attributes: dict[str, Any] = {}
        """Set on every backend made (what a command looks for on it)."""

    @property
    def calls(self) -> list[Any]:
        return [call.params for generator in self.generators for call in generator.calls] + self.observed


class InMemorySearch:
    """A search tool over one canned passage (no JVM)."""

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        return [Evidence(id="Tower_sentence_0", text="The tower was first lit in 1852.")][:k]

    def batch_search(self, queries: list[str], k: int = 3) -> list[list[Evidence]]:
        return [self.search(q, k) for q in queries]


def _reply(transcript: list[Segment], params: SamplingParams) -> str:
    return "<think>Nothing to add.</think>\n<answer>SUPPORT</answer>"


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorded]:
    """Every model a command loads is a recording scripted backend; every search tool an in-memory one."""
    record = Recorded()

    def make_generator(config: Any) -> ScriptedGenerator:
        generator = ScriptedGenerator(_reply, name="recording")
        for name, value in record.attributes.items():
            setattr(generator, name, value)
        record.generators.append(generator)
        return generator

    monkeypatch.setattr("evigraph.generators.factory.make_generator", make_generator)
    monkeypatch.setattr("evigraph.tools.search.open_search", lambda **flags: InMemorySearch())
    yield record


def _with_cad_recorder(monkeypatch: pytest.MonkeyPatch, record: Recorded) -> None:
    """``synthesize`` drives the model's logits itself (context-aware decoding), not through a call: record the
    settings it decodes with, and give the recording backend the model and tokenizer it asks for."""
    from evigraph.agents.rag_zeval import synthesis

    def run_synthesis(config: Any, items: Any, model: Any, tokenizer: Any, out_path: Any, **_: Any) -> Any:
        record.observed.append(config)
        return synthesis.SynthesisSummary(out_path=str(out_path))

    monkeypatch.setattr(synthesis, "run_synthesis", run_synthesis)
    record.attributes.update(model=object(), tokenizer=object())


# -- inputs per command ----------------------------------------------------------------------------------------
CLAIM = "The tower was first lit in 1852."
SOURCE = "The tower on the island was first lit in 1852 and rebuilt in 1901."
QUESTION = "When was the tower first lit?"


def _veri_r1_records(tmp: Path) -> Path:
    passages = [{"id": "Tower_sentence_0", "text": CLAIM}, {"id": "Other_sentence_1", "text": "Unrelated."}]
    row = {"id": "c1", "claim": CLAIM, "label": "SUPPORTS", "evidence": ["Tower_sentence_0"], "passages": passages}
    return write_jsonl(tmp / "claims.jsonl", [row])


def _seva_pairs(tmp: Path) -> Path:
    return write_jsonl(tmp / "pairs.jsonl", [{"id": "a", "claim": CLAIM, "source": SOURCE, "label": "Attributable"}])


def _ranked_sets(tmp: Path) -> Path:
    candidates = [{"text": "In 1852.", "alpha": 0.0}, {"text": "In 1950.", "alpha": -1.0}]
    row = {"id": "s0", "question": QUESTION, "reference": SOURCE, "candidates": candidates}
    return write_jsonl(tmp / "sets.jsonl", [row])


def _text(tmp: Path, name: str, text: str) -> str:
    (tmp / name).write_text(text, encoding="utf-8")
    return str(tmp / name)


def _answers(tmp: Path) -> list[str]:
    return [_text(tmp, "a.txt", "In 1852."), _text(tmp, "b.txt", "In 1950.")]


def _wikieval(tmp: Path) -> Path:
    row = {"question": QUESTION, "context_v1": [SOURCE], "answer": "In 1852.", "ungrounded_answer": "In 1950."}
    return write_jsonl(tmp / "wiki.jsonl", [row])


@dataclass(frozen=True)
class Case:
    """How to run one command on tiny inputs: its arguments, and anything it needs patched."""

    args: Callable[[Path], list[str]]
    setup: Callable[[pytest.MonkeyPatch, Recorded], None] = field(default=lambda monkeypatch, record: None)


TRACE = {
    "question": QUESTION,
    "steps": [
        {"reasoning": "Look it up.", "query": "tower first lit", "evidence": [{"id": "t", "text": SOURCE}]},
        {"reasoning": "So 1852.", "answer": "1852"},
    ],
}

CASES: dict[tuple[str, str], Case] = {
    ("veri-r1", "run"): Case(lambda tmp: [CLAIM]),
    ("veri-r1", "filter"): Case(lambda tmp: ["--data", str(_veri_r1_records(tmp)), "--out", str(tmp / "kept")]),
    ("veri-r1", "eval"): Case(
        lambda tmp: ["--data", str(_veri_r1_records(tmp)), "--out", str(tmp / "run"), "--corpus", "in-memory"]
    ),
    ("seva", "run"): Case(lambda tmp: ["--claim", CLAIM, "--source", SOURCE]),
    ("seva", "annotate"): Case(
        lambda tmp: ["--data", str(_seva_pairs(tmp)), "--out", str(tmp / "sft.jsonl"), "--attempts", "1"]
    ),
    ("seva", "evolve"): Case(
        lambda tmp: ["--data", str(_seva_pairs(tmp)), "--out", str(tmp / "loop"), "--rounds", "1", "--budget", "0"]
    ),
    ("seva", "eval"): Case(lambda tmp: ["--data", str(_seva_pairs(tmp)), "--out", str(tmp / "run")]),
    ("rlseek", "run"): Case(
        lambda tmp: ["--source", _text(tmp, "doc.txt", SOURCE), "--response", _text(tmp, "answer.txt", CLAIM)]
    ),
    ("rlseek", "eval"): Case(
        lambda tmp: ["--data", str(files("evigraph.agents.rlseek.fixtures")), "--out", str(tmp / "run"), "--limit", "1"]
    ),
    ("rag-zeval", "run"): Case(
        lambda tmp: ["--question", QUESTION, "--reference", SOURCE, "--responses", *_answers(tmp)]
    ),
    ("rag-zeval", "meta-eval"): Case(lambda tmp: ["--wikieval", str(_wikieval(tmp)), "--out", str(tmp / "meta")]),
    ("rag-zeval", "synthesize"): Case(
        lambda tmp: [
            "--data",
            str(write_jsonl(tmp / "items.jsonl", [{"id": "i1", "question": QUESTION, "passage": SOURCE}])),
            "--out",
            str(tmp / "sets.jsonl"),
        ],
        setup=_with_cad_recorder,
    ),
    ("rag-zeval", "eval"): Case(lambda tmp: ["--data", str(_ranked_sets(tmp)), "--out", str(tmp / "run")]),
    ("stepgap", "run"): Case(lambda tmp: [_text(tmp, "trace.json", json.dumps(TRACE))]),
    ("stepgap", "eval"): Case(
        lambda tmp: [
            "--data",
            str(write_jsonl(tmp / "q.jsonl", [{"id": "q1", "question": QUESTION, "golds": ["1852"]}])),
            "--out",
            str(tmp / "run"),
            "--corpus",
            "in-memory",
        ]
    ),
}


# -- the walk --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    agent: LoadedAgent
    hook: str
    click: Any

    @property
    def words(self) -> list[str]:
        """How a user calls it: the agent's verb, or ``HOOK AGENT``."""
        return [self.agent.spec.verb or "run"] if self.hook == "run" else [self.hook, self.agent.name]

    def flags(self) -> dict[str, bool]:
        """Every generator flag it accepts → whether it is hidden (refused with a reason)."""
        found = {}
        for param in self.click.params:
            for flag in getattr(param, "opts", ()):
                if is_generator_flag(flag):
                    found[flag] = bool(getattr(param, "hidden", False))
        return found


def agent_commands() -> list[Command]:
    """Every command of every registered agent."""
    agents, broken = load_agents()
    assert not broken, broken
    commands = []
    for spec in agents.values():
        agent = spec.load()
        for hook in sorted({*CONTRACT, *agent.hooks}):
            try:
                commands.append(Command(agent, hook, agent_cli_command(agent, hook)))
            except ConfigError:  # the agent declares no evaluation or reward for this framework command
                assert hook in CONTRACT
    return commands


COMMANDS = agent_commands()
WITH_FLAGS = [c for c in COMMANDS if c.flags()]


def _invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run(argv, application=build_app(), prog_name="evigraph")
    out, err = capsys.readouterr()
    return code, out + err


def test_every_command_with_generator_flags_has_a_case() -> None:
    names = {(c.agent.name, c.hook) for c in WITH_FLAGS}
    assert names - set(CASES) == set(), "add an input case for these commands"
    assert set(CASES) - names == set(), "these cases name no command that takes generator flags"
    # The walk sees every agent's verb.
    with_verb = {c.agent.name for c in COMMANDS if c.agent.spec.verb is not None}
    assert with_verb and with_verb == {c.agent.name for c in WITH_FLAGS if c.hook == "run"}
    assert not [c for c in COMMANDS if c.hook in ("score", "reward") and c.flags()]  # no model runs there


@pytest.mark.parametrize("command", WITH_FLAGS, ids=lambda c: " ".join(c.words))
def test_each_generator_flag_reaches_the_call_or_is_refused(
    command: Command,
    tmp_path: Path,
    recorded: Recorded,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    case = CASES[(command.agent.name, command.hook)]
    case.setup(monkeypatch, recorded)
    flags = command.flags()
    values = flag_values(list(flags))
    acting = [flag for flag, refused in flags.items() if not refused]
    # Refused flags: exit 2 with the flag named, before any model loads.
    for index, flag in enumerate(f for f, refused in flags.items() if refused):
        inputs = tmp_path / f"refused-{index}"
        inputs.mkdir()
        code, output = _invoke([*command.words, *case.args(inputs), flag, values[flag][1]], capsys)
        assert code == 2 and f"{flag}: not used by this command" in output, output
        assert "Traceback" not in output and not recorded.generators
    # Acting flags, all at once (each value is distinct): every value reaches a call.
    given = [part for flag in acting for part in (flag, values[flag][1])]
    code, output = _invoke([*command.words, *case.args(tmp_path), *given], capsys)
    assert code in (0, 1), output  # 1: the scripted replies are not always good answers
    assert "Traceback" not in output
    calls = recorded.calls
    assert calls, f"{command.words}: no model call"
    for flag in acting:
        name, _, expected = values[flag]
        seen = {getattr(call, name, None) for call in calls}
        assert expected in seen, f"{' '.join(command.words)} {flag}: {name} in the calls: {seen}"


def test_generate_passes_every_sampling_flag(recorded: Recorded, capsys: pytest.CaptureFixture[str]) -> None:
    given = [part for flag, (_, value, _) in VALUES.items() for part in (flag, value)]
    code, output = _invoke(["generate", "Say hi.", *given], capsys)
    assert code == 0, output
    (params,) = recorded.calls
    assert {name: getattr(params, name) for name, _, _ in VALUES.values()} == {
        name: expected for name, _, expected in VALUES.values()
    }


def test_check_refuses_the_generators_settings_it_cannot_use(
    tmp_path: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evigraph check` runs the judge alone: the Search-R1 generator's knobs are refused, not ignored."""
    trace = CASES[("stepgap", "run")].args(tmp_path)
    for flag in ("--max-searches", "--top-k", "--max-information-tokens", "--repair-budget"):
        code, output = _invoke(["check", *trace, flag, "2"], capsys)
        assert code == 2 and f"{flag}: not used by this command" in output, output
    assert not recorded.generators
    code, output = _invoke(["check", *trace, "--max-new-tokens", "5"], capsys)  # no such flag: it is inherited
    assert code == 2 and "No such option: --max-new-tokens" in output


# -- usage errors ----------------------------------------------------------------------------------------------
USAGE_ERRORS = [
    (["info", "--bogus"], "No such option: --bogus"),
    (["generate"], "Missing argument"),
    (["generate", "hi", "--generator.temperature", "warm"], "Invalid value"),
    (["verfy", "x"], "No such command 'verfy'"),
    (["verify", "--bogus", "x"], "No such option: --bogus"),
    (["verify"], "Missing argument"),
    (["check"], "Missing argument"),
    (["attribute", "--claim", "c"], "Missing option '--source'"),
    (["rank", "--question"], "requires an argument"),
    (["detect", "--source", "a", "--response", "b", "--json=3"], "does not take a value"),
    (["eval", "seva", "--data", "d", "--out", "o", "--concurrency", "0"], "Invalid value for '--concurrency'"),
    (["score", "rlseek", "--bogus"], "No such option: --bogus"),
    (["filter", "veri-r1", "--limit", "x"], "Invalid value for '--limit'"),
    (["corpus", "build", "--bogus"], "No such option: --bogus"),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS, ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_usage_errors_print_the_usage_and_the_error_and_exit_2(
    argv: list[str], message: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    code, output = _invoke(argv, capsys)
    assert code == 2, output
    assert message in output and "Traceback" not in output
    lines = output.strip().splitlines()
    assert lines[0].startswith("Usage: evigraph") and len(lines) <= 5, output
    assert not recorded.generators


def test_the_console_entry_point_turns_a_usage_error_into_exit_2_without_a_traceback() -> None:
    from tests.cli import run_cli

    done = run_cli("verify", "--bogus", "x")
    assert done.returncode == 2 and "No such option: --bogus" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) <= 5


# -- empty inputs ----------------------------------------------------------------------------------------------
def _blank_inputs(tmp: Path) -> list[tuple[list[str], str]]:
    blank = _text(tmp, "blank.txt", "  \n")
    text = _text(tmp, "text.txt", CLAIM)
    trace = {**TRACE, "question": " "}
    blank_step = {**TRACE, "steps": [{"reasoning": "  "}]}
    return [
        (["verify", ""], "input 'claim' is empty or blank"),
        (["verify", "   "], "input 'claim' is empty or blank"),
        (["attribute", "--claim", " ", "--source", SOURCE], "input 'claim' is empty or blank"),
        (["attribute", "--claim", CLAIM, "--source", ""], "input 'source' is empty or blank"),
        (["attribute", "--claim", CLAIM, "--source", f"@{blank}"], "input 'source' is empty or blank"),
        (["detect", "--source", text, "--response", blank], "input 'response' is empty or blank"),
        (["detect", "--source", blank, "--response", text], "input 'source' is empty or blank"),
        (["detect", "--source", text, "--response", text, "--question", " "], "--question: empty or blank"),
        (["detect", "--source", text, "--response", text, "--task", "qa"], "--question: the qa task"),
        (["rank", "--question", " ", "--reference", SOURCE, "--responses", text, text], "input 'question' is empty"),
        (["rank", "--question", QUESTION, "--reference", "", "--responses", text, text], "input 'reference' is empty"),
        (["check", _text(tmp, "q.json", json.dumps(trace))], "field question: empty or blank"),
        (["check", _text(tmp, "s.json", json.dumps(blank_step))], "field steps.0: an empty step"),
        (["check", _text(tmp, "e.json", "")], "not valid JSON"),
    ]


def test_empty_or_blank_inputs_are_refused_before_a_model_loads(
    tmp_path: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, message in _blank_inputs(tmp_path):
        code, output = _invoke(argv, capsys)
        assert code == 2 and message in output, (argv, output)
        assert "Traceback" not in output
    assert not recorded.generators  # nothing loaded a model
