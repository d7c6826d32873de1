"""kubectl-like tables (``pumice.cli.tables``): the direct layout of plain text is Rich's, line for line,
and text it does not take still lines up by the cells it occupies."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pumice.cli.tables import plain_lines, print_table, rich_lines

PRINTABLE = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    columns = draw(st.integers(1, 5))
    headers = draw(st.lists(PRINTABLE, min_size=columns, max_size=columns))
    rows = draw(st.lists(st.lists(PRINTABLE, min_size=columns, max_size=columns), max_size=8))
    return headers, rows


@given(tables())
def test_plain_text_is_laid_out_as_rich_lays_it_out(table: tuple[list[str], list[list[str]]]) -> None:
    headers, rows = table
    assert plain_lines(headers, rows) == rich_lines(headers, rows)


@pytest.mark.parametrize("odd", ["日本語", "tab\there", "e\u0301te", "new\nline", "\x1b[31mred"])
def test_other_text_goes_to_rich(odd: str) -> None:
    assert plain_lines(["NAME", "NODE"], [[odd, "n1"]]) is None


def test_wide_characters_line_up_by_the_cells_they_take() -> None:
    out = io.StringIO()
    print_table(["NAME", "NODE"], [["日本語", "n1"], ["abcdefgh", "n2"]], title="Pods")
    print_table(["NAME", "NODE"], [["日本語", "n1"], ["abcdefgh", "n2"]], title="Pods", file=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Pods"
    # 日本語 takes 6 cells: padded to the 8 of abcdefgh, then the gap
    assert lines[2] == "日本語     n1"
    assert lines[3] == "abcdefgh   n2"


def test_none_is_empty_and_a_long_title_stays_on_one_line() -> None:
    out = io.StringIO()
    print_table(["N", "S"], [["a", None], ["b", "Running"]], title="A title much longer than the table", file=out)
    assert out.getvalue().splitlines() == ["A title much longer than the table", "N   S", "a", "b   Running"]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_header_is_bold_and_the_title_italic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    out = Terminal()
    print_table(["NAME", "NODE"], [["p1", "n1"]], title="Binds (1)", file=out)
    assert out.getvalue().splitlines() == ["\x1b[3mBinds (1)\x1b[0m", "\x1b[1mNAME   NODE\x1b[0m", "p1     n1"]
    monkeypatch.setenv("TERM", "dumb")
    out = Terminal()
    print_table(["NAME", "NODE"], [["p1", "n1"]], file=out)
    assert out.getvalue().splitlines() == ["NAME   NODE", "p1     n1"]


def test_ragged_rows_are_padded_and_extra_cells_get_columns() -> None:
    out = io.StringIO()
    print_table(["NAME", "NODE"], [["p1"], ["p2", "n2", "extra"]], file=out)
    assert out.getvalue().splitlines() == ["NAME   NODE", "p1", "p2     n2     extra"]
