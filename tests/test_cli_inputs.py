"""The text-input convention of the agent verbs (:mod:`evigraph.cli.text_args`): ``TEXT``, ``@FILE``, ``-``."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evigraph.cli.text_args import read_inputs, text_or_file
from evigraph.errors import ConfigError


def test_text_file_and_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("from a file", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO("from stdin"))
    read = read_inputs({"--a": "plain words", "--b": f"@{tmp_path / 'a.txt'}", "--c": "-", "--d": None})
    assert [read.text(f) for f in ("--a", "--b", "--c", "--d")] == ["plain words", "from a file", "from stdin", None]
    assert [read.one(f).origin for f in ("--a", "--b", "--c")] == [None, str(tmp_path / "a.txt"), "<stdin>"]  # type: ignore[union-attr]
    assert text_or_file("@@handle wrote this") == "@handle wrote this"  # @@: a text that starts with @


def test_bare_paths_are_files_only_where_the_flag_took_paths(tmp_path: Path) -> None:
    path = tmp_path / "doc.txt"
    path.write_text("the document", encoding="utf-8")
    read = read_inputs({"--source": str(path), "--claim": str(path)}, path_ok=("--source",))
    assert (read.text("--source"), read.text("--claim")) == ("the document", str(path))
    many = read_inputs({"--responses": [str(path), "an answer in words"]}, path_ok=("--responses",))
    assert [i.text for i in many.many("--responses")] == ["the document", "an answer in words"]
    assert read_inputs({"--source": "Paris"}, path_ok=("--source",)).text("--source") == "Paris"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"--source": "@"}, "--source: '@' names no file"),
        ({"--source": "@/no/such/file.txt"}, "--source: no such file: /no/such/file.txt"),
        ({"--source": "@{tmp}"}, "is a folder, not a file"),
        ({"--source": "answer.txt"}, "--source: no such file: answer.txt"),  # a mistyped name, not a text
        ({"--source": "-", "--response": "-"}, "--source and --response read standard input"),
        ({"--responses": ["-", "-"]}, "--responses (twice) read standard input"),
    ],
)
def test_bad_inputs_name_the_flag_and_the_file(values: dict, message: str, tmp_path: Path) -> None:
    values = {k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v for k, v in values.items()}
    with pytest.raises(ConfigError) as caught:
        read_inputs(values, path_ok=("--source", "--responses"))
    assert message in str(caught.value)


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match=r"--claim: cannot read .*b\.bin"):
        read_inputs({"--claim": f"@{tmp_path / 'b.bin'}"})
