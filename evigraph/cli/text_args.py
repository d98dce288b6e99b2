"""One convention for the text inputs of every agent verb: ``TEXT``, ``@FILE`` or ``-`` (standard input).

- ``TEXT``: the value is the text itself (``evigraph verify "The tower was lit in 1852."``);
- ``@FILE``: the contents of ``FILE`` (UTF-8); ``@@...`` stands for a text that starts with ``@``;
- ``-``: standard input, read once: only one input of a command may take it.

Inputs that took a file path before this convention (``detect --source/--response``, ``rank --responses``,
``check TRACE``) still read a bare value that names an existing file as that file (``path_ok``), so older
command lines keep working; a bare value that looks like a file name (one word with a ``/`` or a text file's
suffix, ``answer.txt``) but names none is an error there rather than a text to check. Any other bare value is
text.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evigraph.errors import ConfigError

__all__ = ("INPUT", "STDIN", "Inputs", "TextInput", "read_inputs", "text_or_file")

STDIN = "-"
INPUT = "TEXT|@FILE|-"
"""The metavar of a text input in ``--help``."""
_FILE_PREFIX = "@"


@dataclass(frozen=True)
class TextInput:
    """What one input read: its text and where it came from (``<stdin>``, a file path, or ``None`` for text)."""

    text: str
    origin: str | None = None

    @property
    def where(self) -> str:
        """A name for messages: the file, ``<stdin>``, or ``the text given``."""
        return self.origin or "the text given"


def _read_file(path: Path, flag: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no such file: {path}", source=flag) from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a folder, not a file", source=flag) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read {path}: {error}", source=flag) from None


def _read_one(value: str, flag: str, *, path_ok: bool) -> TextInput:
    if value == STDIN:
        return TextInput(sys.stdin.read(), "<stdin>")
    if value.startswith(_FILE_PREFIX * 2):
        return TextInput(value[1:])
    if value.startswith(_FILE_PREFIX):
        if not value[1:]:
            raise ConfigError("'@' names no file (write @FILE, or @@TEXT for a text that starts with @)", source=flag)
        path = Path(value[1:]).expanduser()
        return TextInput(_read_file(path, flag), str(path))
    if path_ok and _looks_like_path(value):
        path = Path(value).expanduser()
        if not path.exists():  # a mistyped file name must not be checked as the text itself
            raise ConfigError(f"no such file: {path} (words given as text need a space, or @FILE or -)", source=flag)
        return TextInput(_read_file(path, flag), str(path))
    if path_ok and len(value) < 4096 and "\n" not in value and Path(value).expanduser().is_file():
        path = Path(value).expanduser()
        return TextInput(_read_file(path, flag), str(path))
    return TextInput(value)


_FILE_SUFFIX = re.compile(r"\.(txt|text|md|json|jsonl|csv|tsv|html|xml|ya?ml)$", re.IGNORECASE)


def _looks_like_path(value: str) -> bool:
    """One token with a folder separator or a text file's suffix (``doc.txt``, ``runs/a``): a file name."""
    return bool(value) and not any(c.isspace() for c in value) and ("/" in value or bool(_FILE_SUFFIX.search(value)))


@dataclass(frozen=True)
class Inputs:
    """The inputs of one command, read: per flag, what each of its values held (``[]`` when not given)."""

    read: Mapping[str, list[TextInput]]

    def one(self, flag: str) -> TextInput | None:
        """The input of a single-valued ``flag``, or ``None`` when it was not given."""
        values = self.read.get(flag) or []
        return values[0] if values else None

    def text(self, flag: str) -> str | None:
        """The text of a single-valued ``flag``, or ``None`` when it was not given."""
        found = self.one(flag)
        return found.text if found is not None else None

    def many(self, flag: str) -> list[TextInput]:
        """Every input of a multi-valued ``flag``, in order."""
        return list(self.read.get(flag) or [])


def read_inputs(values: Mapping[str, str | Sequence[str] | None], *, path_ok: Sequence[str] = ()) -> Inputs:
    """Read every text input of one command under the convention above. ``values`` maps a flag as the user
    knows it (``--source``) to its value, a list of values, or ``None`` (not given). Flags in ``path_ok`` also
    read a bare existing file path as the file.

    Raises:
        ConfigError: more than one value is ``-`` (the flags named), or an ``@FILE`` or a path cannot be read
            (the flag and the file named).
    """
    listed = {flag: _listed(value) for flag, value in values.items()}
    readers = [flag for flag, items in listed.items() for item in items if item == STDIN]
    if len(readers) > 1:
        shown = " and ".join(dict.fromkeys(readers)) if len(set(readers)) > 1 else f"{readers[0]} (twice)"
        raise ConfigError(
            f"{shown} read standard input ('-'); only one input can come from stdin, give the others as text or @FILE"
        )
    return Inputs(
        {flag: [_read_one(v, flag, path_ok=flag in path_ok) for v in items] for flag, items in listed.items()}
    )


def text_or_file(value: str, flag: str = "value") -> str:
    """One text input under the convention above (``TEXT``, ``@FILE`` or ``-``): what a plug-in agent's command
    calls for a flag that may hold a long text."""
    text = read_inputs({flag: value}).text(flag)
    assert text is not None
    return text


def _listed(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
