"""``evigraph.agent(NAME, model=..., search=..., nli=..., **config)``: every registered agent's compiled graph from a
scripted model runs its minimal input to the agent's own output type; the model forms it takes (a generator, a
``scripted:`` spec, a LangChain chat model); config fields reach the graph; bad names fail with a ConfigError naming
them before any model loads; ``import evigraph`` stays light. The scripted models are tests/embed/hosts.py's: a
statement is backed when every year it names is in the source (the fact: Hog Island Light, first lit in 1854)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import evigraph
from evigraph.embed import EvigraphChatModel
from evigraph.generators.scripted import ScriptedGenerator
from evigraph.registry import get_agent, load_agents
from evigraph.trajectory import Segment
from tests.agents.stepgap.doubles import judgement
from tests.embed.hosts import ENTRY_ID, FACT, QUESTION, WRONG, Memory, YearNLI, inputs_for, scripted

DOC = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"
REGISTERED = tuple(load_agents()[0])


def stepgap_model(transcript: list[Segment], _params: object) -> str:
    """StepGap's rollout: the policy searches, then answers 1854; the judge (its prompt has a CONTEXT block) finds
    the fact as the quote."""
    if "CONTEXT\n" in transcript[0].text:
        return judgement(found=True, quote=FACT)
    if not any(segment.origin == "policy" for segment in transcript):
        return "<think>Find when the light was first lit.</think>\n<search>Hog Island Light</search>"
    return "<think>It was first lit in 1854.</think>\n<answer>1854</answer>"


class Case(NamedTuple):
    """One agent's scripted run: its model, minimal input, the resources it needs, and what to read off the output
    with the value the scripted judgement gives (a statement naming 1853 is not backed by the 1854 fact)."""

    model: Callable[[], ScriptedGenerator]
    inputs: dict[str, Any]
    resources: dict[str, Any]
    observe: Callable[[Any], Any]
    expected: Any


CASES: dict[str, Case] = {
    # The claim names 1853; the one entry says 1854 and is cited.
    "veri-r1": Case(lambda: scripted("veri-r1"), {"claim": WRONG}, {"search": Memory()},
                    lambda out: (out.label, out.evidence), ("REFUTE", [ENTRY_ID])),
    # The summary's year is flagged as the one hallucinated span.
    "rlseek": Case(lambda: scripted("rlseek"), inputs_for("rlseek", WRONG), {},
                   lambda out: [span.text for span in out.spans], ["1853"]),
    "seva": Case(lambda: scripted("seva"), inputs_for("seva", WRONG), {},
                 lambda out: out.label, "Not Attributable"),
    # One candidate with one claim, not supported: S = 0/1.
    "rag-zeval": Case(lambda: scripted("rag-zeval"), inputs_for("rag-zeval", WRONG), {},
                      lambda out: [(c.supported, c.total) for c in out.candidates], [(0, 1)]),
    # A search step and an answer step; the answer matches the gold exactly.
    "stepgap": Case(lambda: ScriptedGenerator(stepgap_model, name="scripted-stepgap"),
                    {"question": QUESTION, "golds": ["1854"]}, {"search": Memory(), "nli": YearNLI()},
                    lambda out: (out.answer, out.em, len(out.labels)), ("1854", 1, 2)),
}  # fmt: skip


def output_type(name: str) -> type:
    """The type of ``output`` in the agent's declared output schema."""
    return typing.get_type_hints(get_agent(name).load().output_schema)["output"]


def test_the_registry_lists_the_built_in_agents_and_each_has_a_case() -> None:
    assert {"veri-r1", "stepgap", "rlseek", "seva", "rag-zeval"} <= set(REGISTERED)
    missing = sorted(set(REGISTERED) - set(CASES))
    assert not missing, f"registered agents without a scripted case here: {missing}"


@pytest.mark.parametrize("name", REGISTERED)
def test_every_registered_agent_runs_from_a_scripted_model(name: str) -> None:
    case = CASES[name]
    graph = evigraph.agent(name, model=case.model(), **case.resources)
    result = asyncio.run(graph.ainvoke(case.inputs))
    assert isinstance(result["output"], output_type(name))
    assert result["trajectory"].error is None
    assert case.observe(result["output"]) == case.expected


SEVA_VERDICT = {
    "evidence_alignment": [{"claim_span": "1853", "source_span": FACT, "status": "mismatch"}],
    "reasoning_chain": [{"claim_part": "1853", "source_evidence": FACT, "judgment": "not_supported",
                         "explanation": "The source states another year."}],
    "label": "Not Attributable", "confidence": 0.8, "error_type": "temporal_shift", "fix_suggestion": None,
}  # fmt: skip


def test_the_model_can_be_a_generator_a_scripted_spec_or_a_chat_model(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([json.dumps(SEVA_VERDICT)]), encoding="utf-8")
    models = {
        "generator": scripted("seva"),
        "spec": f"scripted:{replies}",
        "chat model": EvigraphChatModel(generator=scripted("seva")),
    }
    for form, model in models.items():
        result = asyncio.run(evigraph.agent("seva", model=model).ainvoke(inputs_for("seva", WRONG)))
        assert result["output"].label == "Not Attributable", form


def test_config_fields_reach_the_graph() -> None:
    # ``offline=True`` is Veri-R1's offline variant: no search tool, the entries come with the claim.
    graph = evigraph.agent("veri-r1", model=scripted("veri-r1"), offline=True)
    assert graph.get_name() == "veri-r1-offline"
    assert evigraph.agent("veri-r1", model=scripted("veri-r1"), search=Memory()).get_name() == "veri-r1"


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: evigraph.agent("seva", model=ScriptedGenerator([]), no_such_field=1), "no_such_field"),
        (lambda: evigraph.agent("veri-r1", model=ScriptedGenerator([]), max_searches=-1), "max_searches"),
        (lambda: evigraph.agent("no-such-agent", model=ScriptedGenerator([])), "no-such-agent"),
        (lambda: evigraph.agent("seva", model=3), "got int"),
        (lambda: evigraph.agent("veri-r1", model=ScriptedGenerator([]), search=3), "search"),
    ],
    ids=["unknown field", "invalid field", "unknown agent", "model type", "search type"],
)
def test_bad_names_raise_a_config_error_naming_them(call: Callable[[], Any], named: str) -> None:
    with pytest.raises(evigraph.ConfigError, match=re.escape(named)):
        call()


PROBE = """
import json, sys
import evigraph
try:
    evigraph.agent({name!r}, model="smollm2", **{config!r})
except evigraph.ConfigError as error:
    print(json.dumps({{"error": str(error), "torch": "torch" in sys.modules}}))
"""


@pytest.mark.parametrize(
    ("name", "config", "named"),
    [("no-such-agent", {}, "unknown agent 'no-such-agent'"), ("seva", {"no_such_field": 1}, "no_such_field")],
    ids=["unknown agent", "unknown field"],
)
def test_bad_names_fail_before_the_model_loads(tmp_path: Path, name: str, config: dict[str, Any], named: str) -> None:
    # A fresh interpreter, where loading the embedded model would import torch.
    code = PROBE.format(name=name, config=config)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert named in probe["error"] and probe["torch"] is False


def test_import_evigraph_stays_light(tmp_path: Path) -> None:
    heavy = ("langgraph", "langchain_core", "torch", "transformers")
    code = (
        "import json, sys, evigraph\n"
        "assert callable(evigraph.agent)\n"
        f"print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_the_guide_snippet_runs_an_agent_from_its_graph() -> None:
    # docs/embedding.md opens with evigraph.agent in a ``py`` block (tests/embed/test_docs.py runs the ``python``
    # blocks, the four embedding forms); here it runs against the scripted Hog Island Light case.
    [snippet] = re.findall(r"```py\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    namespace: dict[str, Any] = {"chat_model": EvigraphChatModel(generator=scripted("veri-r1")), "search": Memory()}
    exec(compile(snippet, f"{DOC}:agent", "exec"), namespace)
    assert namespace["result"]["output"].label == "REFUTE"
