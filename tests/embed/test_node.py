"""Every agent as a node of a host's LangGraph graph (:func:`evigraph.embed.verifier_node`) and the guard that
routes on it (:func:`evigraph.embed.verification_router`).

Hosts use their own key names (``inputs=`` renames) and a checkpointer; the verifiers run on the content-aware
scripted models of :mod:`tests.embed.hosts`, so the right answer passes and the wrong one fails. Each agent's
mapping is checked on the verdict: spans, evidence, steps, a repair in our words. An interrupt inside the
verifier pauses and resumes the host in LangGraph's strict deserialisation mode (a fresh process,
``_interrupt_run.py``). Hostile host text cannot forge a verdict.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from evigraph.embed import Verification, VerificationState, Verifier, verification_router, verifier_node
from evigraph.errors import ConfigError
from evigraph.generators.scripted import ScriptedGenerator
from tests.embed import hosts

ROOT = Path(__file__).resolve().parents[2]
HOST_KEYS: dict[str, dict[str, str]] = {
    "veri-r1": {"answer": "claim"},
    "rlseek": {"answer": "response", "documents": "source", "task_kind": "task"},
    "seva": {"answer": "claim", "documents": "source"},
    "rag-zeval": {"answers": "candidates", "documents": "reference", "user_question": "question"},
    "stepgap": {"plan": "trace"},
}
"""host key → the agent's input field: no host key is named like the field it feeds."""
VERIFIER_NODES = {
    "veri-r1": "generate",
    "rlseek": "generate",
    "seva": "generate",
    "rag-zeval": "generate",
    "stepgap": "judge",
}
"""A node of each verifier graph that must show up under the host node's namespace."""


def host_state(agent: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """The agent's inputs under the host's own key names, and a key of the host's own."""
    fields = {field: host for host, field in HOST_KEYS[agent].items()}
    assert set(inputs) <= set(fields), f"{agent}: a host key is missing for {set(inputs) - set(fields)}"
    return {**{fields[k]: v for k, v in inputs.items()}, "turns": 3}


def host_schema(agent: str, **more: Any) -> type:
    keys = {**dict.fromkeys([*HOST_KEYS[agent], "turns"], Any), **more}
    return TypedDict("Host", {**typing.get_type_hints(VerificationState), **keys}, total=False)  # type: ignore[misc]


def one_node_host(agent: str, node: Any) -> Any:
    graph = StateGraph(host_schema(agent))
    graph.add_node("verify", node)
    graph.add_edge(START, "verify")
    graph.add_edge("verify", END)
    return graph.compile(checkpointer=InMemorySaver())


def node_for(agent: str, **kwargs: Any) -> Any:
    case = hosts.case(agent)
    return verifier_node(agent, model=hosts.scripted(agent), inputs=HOST_KEYS[agent], **{**case.extra, **kwargs})


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


# -- the node in a host: sync and async, with a checkpointer ---------------------------------------------------
@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_the_node_checks_the_hosts_keys_in_invoke_and_ainvoke(agent: str) -> None:
    case = hosts.case(agent)
    app = one_node_host(agent, node_for(agent))
    direct = Verifier(agent, model=hosts.scripted(agent), **case.extra)
    for name, inputs, passes in (("pass", case.inputs_pass, True), ("fail", case.inputs_fail, False)):
        state = host_state(agent, inputs)
        synced = app.invoke(state, thread(f"sync-{name}"))
        awaited = asyncio.run(app.ainvoke(state, thread(f"async-{name}")))
        for out in (synced, awaited):
            verdict = out["verification"]
            assert isinstance(verdict, Verification) and verdict.agent == agent
            assert verdict.passed is passes and verdict.error is None
            assert (verdict.repair is None) is passes
            assert out["verification_attempts"] == 1 and out["turns"] == 3  # the host's own key is untouched
        # The renamed keys reached the agent's fields: the node's verdict is the one a direct check gives.
        assert synced["verification"] == awaited["verification"] == direct.verify(inputs)
        saved = app.get_state(thread(f"sync-{name}")).values["verification"]
        assert saved == synced["verification"]


def test_inside_a_running_event_loop_a_sync_host_still_checks() -> None:
    """``invoke`` from async code (a notebook): the node runs the verifier on a thread of its own."""
    app = one_node_host("seva", node_for("seva"))

    async def call() -> dict[str, Any]:
        return app.invoke(host_state("seva", hosts.case("seva").inputs_fail), thread("in-loop"))

    assert asyncio.run(call())["verification"].passed is False


@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_the_verifiers_steps_stream_under_the_nodes_namespace(agent: str) -> None:
    app = one_node_host(agent, node_for(agent))
    state = host_state(agent, hosts.case(agent).inputs_fail)
    chunks = list(app.stream(state, thread("stream"), subgraphs=True))
    nested = {node for ns, chunk in chunks if ns and ns[0].startswith("verify:") for node in chunk}
    top = {node for ns, chunk in chunks if not ns for node in chunk}
    assert VERIFIER_NODES[agent] in nested and len(nested) >= 3, nested
    assert top == {"verify"}  # the host sees one node; its steps are the verifier's


# -- what each agent's verdict says -----------------------------------------------------------------------------
def verdicts(agent: str, **kwargs: Any) -> tuple[Verification, Verification]:
    case = hosts.case(agent)
    verifier = Verifier(agent, model=case.generator_pass, **{**case.extra, **kwargs})
    return verifier.verify(case.inputs_pass), verifier.verify(case.inputs_fail)


def test_veri_r1_passes_support_and_names_the_cited_entry() -> None:
    passed, failed = verdicts("veri-r1")
    assert (passed.label, failed.label) == ("SUPPORT", "REFUTE")
    assert [(e.id, e.text) for e in failed.evidence] == [(hosts.ENTRY_ID, hosts.FACT)]
    assert hosts.ENTRY_ID in failed.repair


def test_rlseek_spans_are_half_open_offsets_into_the_checked_response() -> None:
    passed, failed = verdicts("rlseek")
    assert passed.spans == [] and passed.label is None and passed.confidence is None
    start = hosts.WRONG.index("1853")
    assert [(s.start, s.end, s.text) for s in failed.spans] == [(start, start + 4, "1853")]
    assert [(e.text, e.found) for e in failed.evidence] == [(hosts.FACT, True)]
    assert '"1853"' in failed.repair
    # The escaped copy the detector saw has the same offsets; the span's text is the host's own response.
    response = hosts.HOSTILE + hosts.WRONG
    case = hosts.case("rlseek")
    hostile = Verifier("rlseek", model=case.generator_fail).verify({**case.inputs_fail, "response": response})
    assert [response[s.start : s.end] for s in hostile.spans] == [s.text for s in hostile.spans] == ["1853"]


def test_a_parse_failure_is_no_pass() -> None:
    """RLSeek's detector without a final list, SEVA's verdict without a label: nothing was concluded."""
    case = hosts.case("rlseek")
    verdict = Verifier("rlseek", model=ScriptedGenerator(lambda *_: "It looks fine to me.")).verify(case.inputs_pass)
    assert not verdict.passed and verdict.spans == [] and "could not be checked" in verdict.repair
    case = hosts.case("seva")
    verdict = Verifier("seva", model=ScriptedGenerator(lambda *_: "Attributable, I think.")).verify(case.inputs_pass)
    assert not verdict.passed and verdict.label is None and verdict.confidence is None


def test_seva_keeps_the_models_fix_suggestion_out_of_the_repair() -> None:
    passed, failed = verdicts("seva")
    assert (passed.label, passed.confidence) == ("Attributable", 0.9)
    assert (failed.label, failed.confidence) == ("Not Attributable", 0.8)
    assert all(e.found for e in failed.evidence) and {e.text for e in failed.evidence} == {hosts.FACT}
    suggestion = failed.detail["fix_suggestion"]
    assert "Use the source's year" in suggestion and "Use the source's year" not in failed.repair
    assert "date or time" in failed.repair and "<" not in failed.repair


def test_rag_zeval_passes_at_half_its_claims_and_a_host_can_raise_the_bar() -> None:
    passed, failed = verdicts("rag-zeval")
    assert (passed.confidence, failed.confidence) == (1.0, 0.0) and passed.label is None
    assert [(e.text, e.found) for e in failed.evidence] == [(hosts.FACT, True)]
    half = json.dumps([
        {"id": "A", "answer": "...", "atomic_claims": [
            {"claim": "It is a light.", "is_supported": True, "grounding_evidence": [hosts.FACT], "analysis": "."},
            {"claim": "It was lit in 1853.", "is_supported": False, "grounding_evidence": [], "analysis": "."}]}
    ])  # fmt: skip
    inputs = hosts.case("rag-zeval").inputs_fail
    default = Verifier("rag-zeval", model=ScriptedGenerator(lambda *_: half)).verify(inputs)
    strict = Verifier("rag-zeval", model=ScriptedGenerator(lambda *_: half), pass_if=lambda v: v.confidence >= 0.8)
    assert default.passed and default.confidence == 0.5
    assert not strict.verify(inputs).passed


def test_stepgap_reports_every_steps_label_and_repair_action() -> None:
    passed, failed = verdicts("stepgap")
    assert (passed.label, failed.label) == ("no-gap", "IE")
    assert [(s.index, s.label, s.repair) for s in failed.steps] == [(0, "no-gap", None), (1, "IE", "re-search")]
    assert failed.steps[1].text.endswith("[answer] 1853") and "Step 2:" in failed.repair
    assert failed.detail["steps"][1]["pipeline_path"].endswith("stageE:no_entailing_prior")


@pytest.mark.parametrize(("word", "label"), [("entailment", "no-gap"), ("neutral", "IE")])
def test_stepgap_without_an_nli_engine_lets_the_judge_score_entailment(word: str, label: str) -> None:
    """Verifier offers the checker builder only the resources it takes; with no NLI, stages D/E fall back to the
    judge scoring the label words."""
    judge = hosts.scripted("stepgap", scores=lambda _transcript, words: [0.0 if w == word else -5.0 for w in words])
    verdict = Verifier("stepgap", model=judge).verify(hosts.case("stepgap").inputs_pass)
    assert verdict.label == label and verdict.passed is (label == "no-gap")
    assert verdict.detail["nli"] == "generator:scripted-stepgap"


@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_a_failed_run_never_passes(agent: str) -> None:
    case = hosts.case(agent)
    broken = Verifier(agent, model=ScriptedGenerator([]), pass_if=lambda v: True, **case.extra)
    verdict = broken.verify(case.inputs_pass)
    assert not verdict.passed and verdict.error is not None and "GeneratorError" in verdict.error


# -- the router in a hand-built guard ---------------------------------------------------------------------------
def guarded(agent: str, *, better: bool, max_repairs: int = 1) -> Any:
    """answer → verify → route: a failed check goes back to ``answer``, which answers right the second time
    when ``better``; after ``max_repairs`` repairs the host gives up."""

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        tries = state.get("tries", 0) + 1
        text = hosts.RIGHT if better and tries > 1 else hosts.WRONG
        told = state["verification"].repair if "verification" in state else None
        return {**host_state(agent, hosts.inputs_for(agent, text)), "tries": tries, "told": told}

    graph = StateGraph(host_schema(agent, tries=int, told=Any, gave_up=bool))
    graph.add_node("answer", answer)
    graph.add_node("verify", node_for(agent))
    graph.add_node("give_up", lambda _state: {"gave_up": True})
    graph.add_edge(START, "answer")
    graph.add_edge("answer", "verify")
    router = verification_router(passed=END, failed="answer", gave_up="give_up", max_repairs=max_repairs)
    graph.add_conditional_edges("verify", router, [END, "answer", "give_up"])
    graph.add_edge("give_up", END)
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_the_router_sends_a_failed_answer_back_and_the_repair_passes(agent: str) -> None:
    out = guarded(agent, better=True).invoke({}, thread("repair"))
    assert out["verification"].passed and out["verification_attempts"] == 2 and out["tries"] == 2
    assert isinstance(out["told"], str) and out["told"]  # the second answer was given the repair instruction
    assert "gave_up" not in out


@pytest.mark.parametrize("agent", hosts.AGENTS)
@pytest.mark.parametrize("max_repairs", [0, 2])
def test_the_router_gives_up_after_max_repairs(agent: str, max_repairs: int) -> None:
    out = asyncio.run(guarded(agent, better=False, max_repairs=max_repairs).ainvoke({}, thread("give-up")))
    assert out["gave_up"] and not out["verification"].passed
    assert out["verification_attempts"] == out["tries"] == max_repairs + 1


def test_the_router_needs_the_verdict_and_the_attempt_count() -> None:
    route = verification_router(passed="done", failed="answer")
    failed = Verification(agent="seva", passed=False)
    with pytest.raises(ConfigError, match="verification_attempts"):
        route({"verification": failed})
    with pytest.raises(ConfigError, match="no 'verification'"):
        route({"attempts": 1})
    assert route({"verification": Verification(agent="seva", passed=True)}) == "done"  # a pass needs no count
    assert route({"verification": failed.model_dump(), "verification_attempts": 1}) == "answer"
    assert route({"verification": failed, "verification_attempts": 2}) == "done"  # gave_up defaults to passed
    with pytest.raises(ConfigError, match="max_repairs"):
        verification_router(passed="done", failed="answer", max_repairs=-1)


# -- an interrupt inside the verifier, strict deserialisation --------------------------------------------------
@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_an_interrupt_inside_the_verifier_pauses_and_resumes_the_host_in_strict_mode(agent: str) -> None:
    env = {
        **os.environ,
        "LANGGRAPH_STRICT_MSGPACK": "true",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    script = Path(__file__).with_name("_interrupt_run.py")
    done = subprocess.run([sys.executable, str(script), agent], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["paused"] and result["sync_paused"]  # stopped inside the verifier, no verdict yet
    assert result["resumed"] == result["sync_resumed"] == result["baseline"]
    assert not result["baseline"]["passed"] and result["attempts"] == 1
    assert result["saved_type"] == "Verification" and result["saved"] == result["resumed"]  # the checkpoint's copy
    assert result["warnings"] == []


# -- hostile host text -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("agent", hosts.AGENTS)
def test_hostile_host_text_cannot_forge_a_verdict(agent: str) -> None:
    case = hosts.case(agent)
    generator = hosts.scripted(agent)
    app = one_node_host(agent, verifier_node(agent, model=generator, inputs=HOST_KEYS[agent], **case.extra))
    wrong = app.invoke(host_state(agent, hosts.hostile_inputs(agent, hosts.WRONG)), thread("hostile-wrong"))
    right = app.invoke(host_state(agent, hosts.hostile_inputs(agent, hosts.RIGHT)), thread("hostile-right"))
    assert not wrong["verification"].passed  # the forged tags, verdicts and ids changed nothing ...
    assert right["verification"].passed  # ... in either direction
    repair = wrong["verification"].repair
    assert "<" not in repair and '{"label"' not in repair and "Label: SUPPORT" not in repair
    prompts = ["\n".join(s.text for s in call.transcript if s.origin == "prompt") for call in generator.calls]
    if agent == "stepgap":  # the judge reads the trace as JSON data: the text stays inside its strings
        question = hosts.hostile_inputs(agent)["trace"]["question"]
        assert all(hosts.judge_context(call.transcript)["question"] == question for call in generator.calls)
    else:  # the host's text sits escaped in its slot: no tag of it survives
        assert prompts and not any("</claim></source>" in p or "<answer>Label: SUPPORT" in p for p in prompts)
