"""StepGap reward worked examples (specs/stepgap.md §3.1–§3.4, §9 #10, #12, #14), against the spec's numbers."""

from __future__ import annotations

import doctest
import math
import statistics

import pytest

from evigraph.agents.search_r1.answers import token_f1
from evigraph.agents.stepgap import rewards
from evigraph.agents.stepgap.rewards import (
    RewardStep,
    base_reward,
    dense_step_values,
    em_reward,
    group_sequence_advantages,
    group_token_advantages,
    is_near_duplicate,
    is_retraction,
    score_trace,
    shaping_reward,
    step_claim,
    step_rewards,
    trajectory_return,
)


def search(label: str, query: str | None, text: str = "") -> RewardStep:
    return RewardStep(kind="search", text=text, query=query, label=label)


def answer(label: str, text: str = "") -> RewardStep:
    return RewardStep(kind="answer", text=text, query=None, label=label)


# ---- §3.1 base rewards: 4 labels × 4 columns (Typed counts for both typed presets) ----------------------------

BASE_TABLE = {
    # label: (Typed, Binary Gap, Untyped-Dense, Search-Only)
    "no-gap": (0.20, 0.20, 0.20, 0.0),
    "MB": (-0.05, 0.0, -0.10, 0.0),
    "IE": (-0.10, 0.0, -0.10, 0.0),
    "CC": (0.05, 0.0, -0.10, 0.0),
}
COLUMNS = (("typed_shape", "typed_base"), ("binary_gap",), ("untyped_dense",), ("search_only",))


@pytest.mark.parametrize(
    ("label", "preset", "expected"),
    [
        (label, preset, row[col])
        for label, row in BASE_TABLE.items()
        for col, presets in enumerate(COLUMNS)
        for preset in presets
    ],
)
def test_stepgap_3_1_base_table(label: str, preset: str, expected: float) -> None:
    assert base_reward(label, preset) == pytest.approx(expected, abs=1e-12)


def test_stepgap_3_1_base_default_is_typed() -> None:
    assert [base_reward(label) for label in ("no-gap", "MB", "IE", "CC")] == [0.20, -0.05, -0.10, 0.05]


# ---- §3.2 token F1 and the near-duplicate decision ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "prior", "query", "f1", "near_dup"),
    [
        ("T-1", "Whiplash director", "director of Whiplash", 0.8000, True),
        ("T-2", "Damien Chazelle films 2017", "Damien Chazelle birthplace", 0.5714, False),
        ("T-3", "Heinrich Gerhard Kuhn nationality", "Heinrich Gerhard Kuhn place of birth", 0.6000, False),
        ("T-4", "Heinrich Gerhard Kuhn nationality", "nationality of Heinrich Gerhard Kuhn", 0.8889, True),
        ("T-5", "Elfie Pertramer", "Elfie Pertramer birthplace", 0.8000, True),
        ("T-6", "Peter and Paul Fortress designer", "who designed the Peter and Paul Fortress", 0.7273, True),
        ("T-7", "Domenico Trezzini death place", "Peter and Paul Fortress designer", 0.0000, False),
    ],
)
def test_stepgap_3_2_token_f1(name: str, prior: str, query: str, f1: float, near_dup: bool) -> None:
    assert token_f1(query, prior) == pytest.approx(f1, abs=1e-4), name
    assert is_near_duplicate(query, [prior]) is near_dup, name


def test_near_duplicate_uses_all_earlier_queries() -> None:
    earlier = ["Whiplash director", "Damien Chazelle films 2017", "Elfie Pertramer"]
    assert is_near_duplicate("director of Whiplash", earlier)  # matches the first, not the last
    assert not is_near_duplicate("Trezzini death place", [])  # nothing earlier → NEW
    assert not is_near_duplicate("b c d e f g h i j k", ["b c d e f g h x y z"])  # F1 exactly 0.7 is NEW (> only)


@pytest.mark.parametrize(
    ("text", "claim", "previous", "expected"),
    [
        ("Actually, Kuhn was born in Germany.", "Kuhn was born in Germany.", "Kuhn was born in Britain.", True),
        ("I WAS WRONG: Kuhn is German.", "Kuhn is German.", "Kuhn is British.", True),  # case-insensitive
        ("Correction - the designer is Trezzini.", "designer is Trezzini", "designer is Rastrelli", True),
        ("Wait, Kuhn was born in Britain.", "The Kuhn was born in Britain!", "Kuhn was born in Britain.", False),
        ("Waiting on results; Kuhn is German.", "Kuhn is German.", "Kuhn is British.", False),  # no whole word
        ("Kuhn is German, contrary to the above.", "Kuhn is German.", "Kuhn is British.", False),  # no marker
        ("Wait.", "", "Kuhn is British.", False),  # a marker with no new claim
    ],
)
def test_is_retraction(text: str, claim: str, previous: str, expected: bool) -> None:
    assert is_retraction(text, claim, previous) is expected


def test_step_claim_drops_only_the_markers() -> None:
    assert step_claim(answer("CC", "Wait, Kuhn was born in Britain.")) == "Kuhn was born in Britain."
    assert step_claim(search("IE", "q", "Kuhn was born in Britain.")) == "Kuhn was born in Britain."


# ---- §3.2 shaping cases S-1…S-11: the last step of a realistic sequence --------------------------------------

KUHN_BRITISH = "Kuhn was a British physicist, so he was born in Britain."

SHAPING_CASES = [
    # S-1: IE, then a NEW query (max F1 0.5714 against the prior query)
    ("S-1", [search("IE", "Damien Chazelle films 2017"), search("no-gap", "Damien Chazelle birthplace")], 0.10),
    # S-2: MB, then a near-duplicate (0.8)
    ("S-2", [search("MB", "Whiplash director"), search("no-gap", "director of Whiplash")], -0.05),
    # S-3: IE, then a verbatim repeat of an EARLIER (not the previous) query (F1 = 1.0)
    (
        "S-3",
        [
            search("no-gap", "Whiplash director"),
            search("IE", "Damien Chazelle films 2017"),
            search("IE", "Whiplash director"),
        ],
        -0.05,
    ),
    # S-4: CC, then "Actually, …" with a new claim, then a search
    (
        "S-4",
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            search(
                "no-gap", "Heinrich Gerhard Kuhn place of birth", "Actually, Kuhn was born in Germany, not Britain."
            ),
        ],
        0.15,
    ),
    # S-5: CC, then answers directly with no retraction pattern
    (
        "S-5",
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            answer("no-gap", "Kuhn and Pertramer are from different countries."),
        ],
        -0.15,
    ),
    # S-6: MB, then answers
    (
        "S-6",
        [search("MB", "Peter and Paul Fortress designer", "The designer died in Saint Petersburg."), answer("MB")],
        -0.15,
    ),
    # S-8: CC, then a new search without a retraction pattern
    (
        "S-8",
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            search("no-gap", "Elfie Pertramer birthplace", "Now find where Pertramer was born."),
        ],
        0.0,
    ),
    # S-9: CC, then "wait" but the claim is the previous one, then answers → no retraction, answer after gap
    (
        "S-9",
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", "Kuhn was born in Britain."),
            answer("no-gap", "Wait, Kuhn was born in Britain."),
        ],
        -0.15,
    ),
    # S-10: MB, then a bridging search (0.6 against the prior)
    (
        "S-10",
        [search("MB", "Heinrich Gerhard Kuhn nationality"), search("no-gap", "Heinrich Gerhard Kuhn place of birth")],
        0.10,
    ),
    # S-11: IE, then a step with neither tag (inference without a query)
    ("S-11", [search("IE", "Elfie Pertramer"), search("no-gap", None, "Pertramer was a Bavarian actress.")], 0.0),
]


@pytest.mark.parametrize(("name", "steps", "expected"), SHAPING_CASES, ids=[c[0] for c in SHAPING_CASES])
def test_stepgap_3_2_shaping_examples(name: str, steps: list[RewardStep], expected: float) -> None:
    assert step_rewards(steps)[-1][1] == pytest.approx(expected, abs=1e-12), name


@pytest.mark.parametrize(
    "step",
    [
        search("no-gap", "Whiplash director"),  # a repeat
        search("no-gap", "Elfie Pertramer birthplace"),  # a new query
        answer("no-gap", "Damien Chazelle"),
        search("no-gap", "Whiplash director", "Actually, the director is Chazelle."),
        search("no-gap", None),
    ],
)
def test_stepgap_3_2_s7_after_no_gap_anything_is_zero(step: RewardStep) -> None:
    assert step_rewards([search("no-gap", "Whiplash director", "Find the director."), step])[-1][1] == 0.0


@pytest.mark.parametrize("label", ["no-gap", "CC", "IE", "MB"])
def test_first_step_has_no_shaping(label: str) -> None:
    # τ_0 = no-gap
    assert step_rewards([answer(label, "Actually, Chazelle.")]) == [(base_reward(label), 0.0)]


def test_shaping_precedence_retract_and_answer_after_cc() -> None:
    # §3.2: a step that both retracts and answers after CC earns +0.15 (first match wins)
    steps = [search("CC", "Kuhn nationality", KUHN_BRITISH), answer("no-gap", "Actually, Kuhn was German.")]
    assert step_rewards(steps)[-1][1] == pytest.approx(0.15)


def test_retraction_only_counts_after_cc() -> None:
    step = search("no-gap", "Heinrich Gerhard Kuhn place of birth", "Actually, Kuhn was born in Germany.")
    common = {"earlier_queries": ["Heinrich Gerhard Kuhn nationality"], "previous_claim": KUHN_BRITISH}
    assert shaping_reward("MB", step, **common) == pytest.approx(0.10)  # case 1, not the retraction bonus
    assert shaping_reward("CC", step, **common) == pytest.approx(0.15)


# ---- §3.3 trajectory returns G-1…G-8 ------------------------------------------------------------------------

G_TRACES: dict[str, tuple[int, list[RewardStep]]] = {
    "G-1": (
        1,
        [
            search("no-gap", "Whiplash director", "I need the director of Whiplash."),
            answer("no-gap", "Whiplash was directed by Damien Chazelle."),
        ],
    ),
    "G-2": (
        0,
        [
            search("IE", "Whiplash director", "I need the director of Whiplash."),
            search("no-gap", "Damien Chazelle films 2017", "The page was about another film; try Chazelle's films."),
            answer("MB", "Chazelle directed La La Land."),
        ],
    ),
    "G-3": (
        0,
        [
            search("IE", "Elfie Pertramer", "I need Elfie Pertramer's birthplace."),
            answer("IE", "Pertramer was born in Vienna."),
        ],
    ),
    "G-4": (
        0,
        [
            search("MB", "Whiplash director", "I need the director of Whiplash."),
            search("MB", "director of Whiplash", "Search again for the director."),
            answer("no-gap", "Whiplash was directed by Damien Chazelle."),
        ],
    ),
    "G-5": (
        1,
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            search(
                "no-gap", "Heinrich Gerhard Kuhn place of birth", "Actually, Kuhn was born in Germany, not Britain."
            ),
            answer("no-gap", "Kuhn and Pertramer were both born in Germany."),
        ],
    ),
    "G-6": (
        1,
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            answer("no-gap", "Kuhn and Pertramer were both born in Germany."),
        ],
    ),
    "G-7": (
        0,
        [
            search("CC", "Heinrich Gerhard Kuhn nationality", KUHN_BRITISH),
            search("no-gap", "Elfie Pertramer birthplace", "Next, where was Pertramer born?"),
            answer("no-gap", "Pertramer was born in Germany, so they are not from the same country."),
        ],
    ),
    "G-8": (
        1,
        [
            search("no-gap", "Peter and Paul Fortress designer", "Who designed the fortress?"),
            search("no-gap", "Domenico Trezzini death place", "Trezzini designed it; where did he die?"),
            search("IE", "Domenico Trezzini birthplace", "Check his biography."),
            # NEW against q1…q3 (max token F1 0.25)
            search("IE", "Swiss architect Trezzini Saint Petersburg", "Try his architect page."),
            answer("no-gap", "Trezzini died in Saint Petersburg."),
        ],
    ),
}

G_EXPECTED = {
    # per-step (base, shape) and R, as printed in §3.3
    "G-1": ([(0.20, 0), (0.20, 0)], 1.40),
    "G-2": ([(-0.10, 0), (0.20, 0.10), (-0.05, 0)], 0.15),
    "G-3": ([(-0.10, 0), (-0.10, -0.15)], -0.35),
    "G-4": ([(-0.05, 0), (-0.05, -0.05), (0.20, -0.15)], -0.10),
    "G-5": ([(0.05, 0), (0.20, 0.15), (0.20, 0)], 1.60),
    "G-6": ([(0.05, 0), (0.20, -0.15)], 1.10),
    "G-7": ([(0.05, 0), (0.20, 0), (0.20, 0)], 0.45),
    "G-8": ([(0.20, 0), (0.20, 0), (-0.10, 0), (-0.10, 0.10), (0.20, -0.15)], 1.35),
}


@pytest.mark.parametrize("name", list(G_EXPECTED))
def test_stepgap_3_3_returns(name: str) -> None:
    em, steps = G_TRACES[name]
    per_step, expected = G_EXPECTED[name]
    flat = [term for pair in step_rewards(steps) for term in pair]
    assert flat == pytest.approx([term for pair in per_step for term in pair], abs=1e-12), name
    assert trajectory_return(em, steps) == pytest.approx(expected, abs=1e-4), name


@pytest.mark.parametrize(("lam", "expected"), [(0.5, 0.075), (1.0, 0.15), (2.0, 0.30)])
def test_stepgap_3_3_lambda_sensitivity(lam: float, expected: float) -> None:
    em, steps = G_TRACES["G-2"]
    assert trajectory_return(em, steps, lam=lam) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("name", "preset", "expected"),
    [
        ("G-2", "binary_gap", 0.20),
        ("G-2", "untyped_dense", 0.00),
        ("G-2", "typed_base", 0.05),
        ("G-5", "binary_gap", 1.40),
        ("G-5", "untyped_dense", 1.30),
        ("G-5", "typed_base", 1.45),
    ],
)
def test_stepgap_3_3_baselines(name: str, preset: str, expected: float) -> None:
    em, steps = G_TRACES[name]
    assert trajectory_return(em, steps, preset=preset) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("name", list(G_TRACES))
@pytest.mark.parametrize("preset", ["search_only", "binary_gap", "untyped_dense", "typed_base"])
def test_unshaped_presets_have_no_shaping(name: str, preset: str) -> None:
    em, steps = G_TRACES[name]
    assert all(shape == 0.0 for _, shape in step_rewards(steps, preset=preset))
    if preset == "search_only":
        assert trajectory_return(em, steps, preset=preset) == em  # EM only


def test_score_trace_breakdown_g5() -> None:
    em, steps = G_TRACES["G-5"]
    trace = score_trace(em, steps, lam=0.5)
    assert [s.index for s in trace.steps] == [0, 1, 2]
    assert [s.bracket for s in trace.steps] == pytest.approx([0.05, 0.35, 0.20])
    assert trace.total == pytest.approx(1 + 0.5 * 0.60)
    assert {c.type: c.value for c in trace.components()} == pytest.approx(
        {"em": 1.0, "base": 0.45, "shape": 0.15, "total": 1.30}
    )


# ---- §3.4 dense assignment and advantages -------------------------------------------------------------------


def test_stepgap_3_4_dense_toy_example() -> None:
    rollout_1 = dense_step_values(0, G_TRACES["G-2"][1], [(0, 4), (4, 7), (7, 9)])  # step lengths 4/3/2
    rollout_2 = dense_step_values(1, G_TRACES["G-1"][1], [(0, 3), (3, 6)])  # lengths 3/3
    assert [r for _, r in rollout_1] == pytest.approx([-0.10, 0.30, -0.05], abs=1e-4)
    assert [r for _, r in rollout_2] == pytest.approx([1.20, 1.20], abs=1e-4)

    tokens = [[r for (start, end), r in rollout for _ in range(start, end)] for rollout in (rollout_1, rollout_2)]
    flat = tokens[0] + tokens[1]
    assert len(flat) == 15
    assert statistics.mean(flat) == pytest.approx(0.5067, abs=1e-4)
    assert statistics.stdev(flat) == pytest.approx(0.6038, abs=1e-4)  # the unbiased std reproduces the spec

    adv = group_token_advantages(tokens)
    assert [len(a) for a in adv] == [9, 6]
    by_return = {round(r, 2): a for r, a in zip(flat, adv[0] + adv[1], strict=True)}
    assert [by_return[r] for r in (-0.10, 0.30, -0.05, 1.20)] == pytest.approx(
        [-1.0047, -0.3423, -0.9219, 1.1482], abs=1e-4
    )


def test_stepgap_3_4_sequence_level_g8() -> None:
    returns = [trajectory_return(*G_TRACES[f"G-{i}"]) for i in range(1, 9)]
    assert returns == pytest.approx([1.40, 0.15, -0.35, -0.10, 1.60, 1.10, 0.45, 1.35], abs=1e-4)
    assert statistics.mean(returns) == pytest.approx(0.70, abs=1e-4)
    assert statistics.stdev(returns) == pytest.approx(0.7550, abs=1e-4)
    assert group_sequence_advantages(returns) == pytest.approx(
        [0.9272, -0.7285, -1.3908, -1.0596, 1.1921, 0.5298, -0.3311, 0.8609], abs=1e-4
    )


def test_advantages_degenerate_groups() -> None:
    assert group_sequence_advantages([]) == []
    assert group_sequence_advantages([0.7]) == [0.0]  # no spread
    assert group_sequence_advantages([1.0, 1.0, 1.0]) == [0.0, 0.0, 0.0]
    assert group_token_advantages([[], []]) == [[], []]
    assert group_token_advantages([[0.3, 0.3], []]) == [[0.0, 0.0], []]


def test_search_only_dense_values_are_em() -> None:
    em, steps = G_TRACES["G-5"]
    values = dense_step_values(em, steps, [(0, 5), (5, 9), (9, 12)], preset="search_only", lam=2.0)
    assert values == [((0, 5), 1.0), ((5, 9), 1.0), ((9, 12), 1.0)]


# ---- §9 #14 EM --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "golds", "expected"),
    [
        ("The Beatles", ["Beatles"], 1),  # article dropped
        ("beatles!", ["The Beatles"], 1),  # case and punctuation
        ("Fab  Four", ["Beatles", "The Fab Four"], 1),  # any alias, whitespace collapsed
        ("Damien Chazelle", "damien chazelle", 1),  # a bare string is one alias
        ("Beatles band", ["Beatles"], 0),
        ("The answer is Paris.", ["Paris"], 0),  # FM4: a sentence around the gold is not EM
        (None, ["Paris"], 0),  # no answer
    ],
)
def test_em_reward(prediction: str | None, golds: list[str] | str, expected: int) -> None:
    assert em_reward(prediction, golds) == expected


# ---- errors ------------------------------------------------------------------------------------------------


def test_unknown_preset() -> None:
    em, steps = G_TRACES["G-1"]
    for call in (
        lambda: base_reward("CC", "typed"),
        lambda: step_rewards(steps, preset="typed"),
        lambda: trajectory_return(em, steps, preset="typed"),
        lambda: trajectory_return(em, [], preset="typed"),
    ):
        with pytest.raises(ValueError, match=r"unknown reward preset 'typed'; expected one of search_only, "):
            call()


def test_unknown_label() -> None:
    with pytest.raises(ValueError, match=r"unknown gap label 'gap'; expected one of no-gap, CC, IE, MB"):
        base_reward("gap")


@pytest.mark.parametrize("lam", [-0.5, math.nan])
def test_bad_lambda(lam: float) -> None:
    em, steps = G_TRACES["G-2"]
    with pytest.raises(ValueError, match=r"lam must be >= 0, got "):
        trajectory_return(em, steps, lam=lam)


def test_bad_em() -> None:
    with pytest.raises(ValueError, match=r"em must be 0 or 1 \(strict exact match\), got 2"):
        trajectory_return(2, G_TRACES["G-1"][1])


def test_span_count_mismatch() -> None:
    em, steps = G_TRACES["G-2"]
    with pytest.raises(ValueError, match=r"got 2 token spans for 3 steps; need one span per step"):
        dense_step_values(em, steps, [(0, 4), (4, 7)])


def test_bad_span() -> None:
    em, steps = G_TRACES["G-1"]
    with pytest.raises(ValueError, match=r"token span \(5, 3\) is not a half-open range"):
        dense_step_values(em, steps, [(0, 5), (5, 3)])


def test_em_reward_needs_a_gold() -> None:
    with pytest.raises(ValueError, match="at least one gold alias"):
        em_reward("Paris", [])


def test_reward_step_rejects_unknown_fields_and_kinds() -> None:
    with pytest.raises(ValueError):
        RewardStep(kind="think", text="", query=None, label="no-gap")
    with pytest.raises(ValueError):
        RewardStep(kind="search", text="", query=None, label="no-gap", claim="x")


def test_docstring_examples() -> None:
    result = doctest.testmod(rewards)
    assert result.attempted > 0 and result.failed == 0
