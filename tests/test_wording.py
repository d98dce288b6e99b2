"""Text shortened for display (:mod:`evigraph.wording`): every place that shortens text ends at a whole word with
"…" -- the shared helper, the run report's one-line verdicts and RLSeek's repair instruction. Expected strings are
written out by hand."""

from __future__ import annotations

from evigraph.agents.rlseek.verification import to_verification
from evigraph.report.helpers import compact
from evigraph.wording import cut_short, shorten

LONG = "The current octagonal iron tower was completed in 1895 and stands about 191 feet tall."


def test_shorten_ends_at_the_last_whole_word_that_fits() -> None:
    # 30 characters leave 29 before the "…": "The current octagonal iron to" would cut "tower" in two.
    assert shorten(LONG, 30) == "The current octagonal iron…"
    # A cut just after a whole word keeps it; a comma before the "…" is dropped.
    assert shorten("one, two three", 8) == "one…"
    assert shorten("It was lit in 1852, then rebuilt.", 20) == "It was lit in 1852…"


def test_shorten_leaves_text_that_fits_alone_and_cuts_a_single_overlong_word() -> None:
    assert shorten(LONG, len(LONG)) == LONG
    # Nothing shorter than the word would show anything: a lone word is cut, with the "…" saying so.
    assert shorten("Supercalifragilisticexpialidocious", 10) == "Supercali…"


def test_cut_short_marks_text_a_bound_stopped_and_drops_a_piece_of_a_word() -> None:
    assert cut_short("The claim says 300 feet while the source gives about 142 fee") == (
        "The claim says 300 feet while the source gives about 142…"
    )
    # Stopped right after a word: the word stays.
    assert cut_short("The claim is not supported by the source's evidence, as the ") == (
        "The claim is not supported by the source's evidence, as the…"
    )


def test_the_report_and_the_rlseek_repair_shorten_at_a_word_boundary() -> None:
    assert compact(LONG, 30) == "The current octagonal iron…"
    response = "Intro. " + "tower " * 30 + "end."
    start, end = 7, len(response) - 1
    output = {"task": "summary", "spans": [{"start": start, "end": end, "text": response[start:end]}],
              "raw_list": [response[start:end]], "parse_ok": True}  # fmt: skip
    repair = to_verification({"output": output}).repair
    # 80 characters allowed, 79 before the "…": 13 "tower " make 78, so the 79th is the "t" of a 14th tower,
    # which is dropped whole -- 13 towers and the "…".
    assert repair is not None and f'"{"tower " * 12}tower…"' in repair
