"""The core records: validation rules, JSONL round trip, token bookkeeping."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from evigraph import Evidence, RewardComponent, Segment, Step, Trajectory, TrajectoryError
from evigraph.errors import InputDataError
from evigraph.jsonl import append_jsonl, read_jsonl, write_jsonl


def make_trajectory(**overrides: object) -> Trajectory:
    values: dict[str, object] = {
        "agent": "veri-r1",
        "input": {"claim": "Hog Island Light was first lit in 1853."},
        "segments": [
            Segment(origin="prompt", role="system", text="sys", token_ids=[]),
            Segment(origin="prompt", role="user", text="claim", token_ids=[1, 2, 3]),
            Segment(origin="policy", text="<search>q</search>", token_ids=[4, 5], logprobs=[-0.1, -0.2]),
            Segment(origin="environment", text="<information>x</information>", token_ids=[6, 7, 8]),
            Segment(origin="policy", text="<answer>Label: SUPPORT</answer>", token_ids=[9], finish_reason="stop"),
        ],
        "steps": [Step(index=0, kind="search", text="q", segment_index=2, token_span=(3, 5))],
        "output": {"label": "SUPPORT", "evidence": ["Hog_Island_Light_sentence_0"]},
        "rewards": [RewardComponent(type="format", value=1.0), RewardComponent(type="evidence_iou", value=0.5)],
    }
    values.update(overrides)
    return Trajectory.model_validate(values)


def test_action_ranges_cover_exactly_the_policy_tokens() -> None:
    trajectory = make_trajectory()
    ids = trajectory.token_ids()
    assert ids == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert trajectory.action_ranges() == [(3, 5), (8, 9)]
    assert [ids[a:b] for a, b in trajectory.action_ranges()] == [[4, 5], [9]]
    assert trajectory.policy_text == "<search>q</search><answer>Label: SUPPORT</answer>"
    assert trajectory.reward("evidence_iou") == 0.5 and trajectory.reward("missing") is None


def test_text_only_segments_have_no_token_view() -> None:
    trajectory = make_trajectory(segments=[Segment(origin="prompt", role="user", text="c")])
    trajectory.segments.append(Segment(origin="policy", text="no ids"))
    assert trajectory.token_ids() is None and trajectory.action_ranges() is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"origin": "prompt", "text": "x"}, "needs role"),  # prompt without a chat role
        ({"origin": "policy", "role": "user", "text": "x"}, "only set on prompt"),  # role on a policy turn
        ({"origin": "policy", "text": "x", "token_ids": [1], "logprobs": [-1.0, -2.0]}, "align"),  # misaligned
        ({"origin": "tool", "text": "x"}, "Input should be"),  # unknown origin
    ],
)
def test_segment_rejects_inconsistent_fields(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Segment.model_validate(fields)


def test_failed_run_is_data_and_round_trips(tmp_path) -> None:
    failed = make_trajectory(error=TrajectoryError(type="GeneratorError", message="engine died", where="generate"))
    ok = make_trajectory()
    path = tmp_path / "runs.jsonl"
    assert write_jsonl(path, [ok, failed]) == 2
    loaded = list(read_jsonl(path, Trajectory))
    assert loaded == [ok, failed]
    assert loaded[1].failed and not loaded[0].failed
    assert Evidence(id="a", text="t").model_dump() == {
        "id": "a",
        "text": "t",
        "title": None,
        "source": None,
        "score": None,
    }


def test_read_jsonl_names_file_line_and_field(tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    good = make_trajectory().model_dump_json()
    path.write_text(good + "\n\n" + json.dumps({"agent": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=r"bad\.jsonl:3: field input: Field required"):
        list(read_jsonl(path, Trajectory))
    path.write_text(good + "\n{not json\n" + good + "\n", encoding="utf-8")
    with pytest.raises(InputDataError, match=r"bad\.jsonl:2: not valid JSON"):
        list(read_jsonl(path, Trajectory))
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(InputDataError, match="expected a JSON object, got list"):
        list(read_jsonl(path, Trajectory))


def test_torn_last_line_is_skipped_only_when_asked(tmp_path) -> None:
    path = tmp_path / "out.jsonl"
    append_jsonl(path, make_trajectory(id="a"))
    append_jsonl(path, make_trajectory(id="b"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write(make_trajectory(id="c").model_dump_json()[:40])  # a writer killed mid-line
    assert [t.id for t in read_jsonl(path, Trajectory, tolerate_truncated_tail=True)] == ["a", "b"]
    with pytest.raises(InputDataError, match=":3:"):
        list(read_jsonl(path, Trajectory))
