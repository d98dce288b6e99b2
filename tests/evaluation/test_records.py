from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from evigraph.errors import ConfigError, InputDataError
from evigraph.evaluation.records import check_gold, gold_fields, load_records


class Claim(BaseModel):
    id: str
    claim: str
    label: str = Field(pattern="^(SUPPORTED|REFUTED|NEI)$")


def load(path: Path, **kwargs) -> list[Claim]:
    return load_records(path, Claim.model_validate, id_of=lambda c: c.id, **kwargs)


def write(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def claims(n: int) -> list[str]:
    return [f'{{"id": "c{i}", "claim": "text {i}", "label": "NEI"}}' for i in range(n)]


def test_reads_all_records_skipping_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", claims(1)[0], "", "   ", claims(2)[1])
    assert [c.id for c in load(path)] == ["c0", "c1"]


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"text"', "expected a JSON object, got str"),
        ('{"id": "x", "claim": "t", "label": "MAYBE"}', "field label"),
        ('{"id": "x", "label": "NEI"}', "field claim: Field required"),
    ],
)
def test_bad_line_names_file_and_line(tmp_path: Path, bad: str, needle: str) -> None:
    path = write(tmp_path / "in.jsonl", *claims(2), "", bad, *claims(4)[2:])
    with pytest.raises(InputDataError, match=needle) as info:
        load(path)
    assert (info.value.path, info.value.line) == (str(path), 4)
    assert str(info.value).startswith(f"{path}:4: ")


def test_error_far_down_the_file_is_found_before_anything_runs(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", *claims(900), '{"id": "late"}')
    with pytest.raises(InputDataError, match=":901: field claim"):
        load(path)


def test_parse_value_error_and_key_error(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", '{"id": "a"}', '{"id": ""}')

    def parse(data: dict) -> str:
        if not data["id"]:
            raise ValueError("id must not be empty")
        return data["id"]

    with pytest.raises(InputDataError, match=r":2: id must not be empty"):
        load_records(path, parse, id_of=lambda x: x)
    with pytest.raises(InputDataError, match=r":1: missing field 'claim'"):
        load_records(path, lambda d: d["claim"], id_of=lambda x: x)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    rows = claims(5)
    path = write(tmp_path / "in.jsonl", *rows[:4], rows[1])
    with pytest.raises(InputDataError, match=r"duplicate id 'c1' \(lines 2 and 5\)") as info:
        load(path)
    assert info.value.line == 5


def test_non_string_id_is_rejected(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", '{"id": 3}')
    with pytest.raises(InputDataError, match=":1: record id must be a non-empty string"):
        load_records(path, lambda d: d, id_of=lambda d: d["id"])


def test_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", "", "  ")
    with pytest.raises(InputDataError, match="no records"):
        load(path)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.jsonl"):
        load(tmp_path / "nope.jsonl")
    with pytest.raises(ConfigError, match="not a file"):
        load(tmp_path)


def test_limit_keeps_file_order(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", *claims(10))
    assert [c.id for c in load(path, limit=3)] == ["c0", "c1", "c2"]
    assert len(load(path, limit=100)) == 10
    assert load(path, limit=0) == []
    with pytest.raises(ConfigError, match="limit"):
        load(path, limit=-1)


def test_limit_still_validates_every_line(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", *claims(5), "{oops")
    with pytest.raises(InputDataError, match=":6:"):
        load(path, limit=2)


def test_shuffle_is_deterministic_and_limit_is_a_prefix(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", *claims(50))
    first = [c.id for c in load(path, shuffle_seed=3, limit=10)]
    assert first == [c.id for c in load(path, shuffle_seed=3, limit=10)]
    assert first != [f"c{i}" for i in range(10)]
    assert first != [c.id for c in load(path, shuffle_seed=4, limit=10)]
    assert [c.id for c in load(path, shuffle_seed=3, limit=20)][:10] == first
    assert sorted(c.id for c in load(path, shuffle_seed=3)) == sorted(f"c{i}" for i in range(50))


class Gold(BaseModel):
    label: str
    evidence: tuple[str, ...] = ()


class Record(BaseModel):
    id: str
    claim: str
    label: str | None = None


def test_check_gold_names_the_line_and_the_field_the_scorer_needs(tmp_path: Path) -> None:
    """Issue 6: every record carries the gold its scorer needs, or none does; checked before anything runs."""
    path = write(
        tmp_path / "in.jsonl", '{"id": "a", "claim": "x", "label": "S"}', '{"id": "b", "claim": "y", "evidence": []}'
    )
    records = [Record.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines()]
    check = {"id_of": lambda r: r.id, "has_gold": lambda r: r.label is not None, "schema": Gold, "scorer": "the scorer"}
    with pytest.raises(InputDataError, match=r"in\.jsonl:2: field 'label' is missing \(the scorer needs it\)"):
        check_gold(path, records, **check)
    assert check_gold(path, records[:1], **check) is True
    assert check_gold(path, records[1:], **check) is False  # no record has gold: a run without metrics
    assert gold_fields(Gold) == (("label",), True)
