"""kubectl-like tables: a title line, a header, one line per row; no borders, columns padded to their
widest cell and three spaces apart, never wrapped or cut.

Rich lays a table out cell by cell, about 0.2 ms a cell: 11 s for the 50,000 binds of a large dry
run. A table of plain ASCII text is therefore written here directly, line for line what Rich prints
for it (a property test holds the two equal); one with any other character (wide, combining,
control) still goes through Rich, which knows their widths.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

#: Spaces between two columns.
GAP = 3
BOLD, ITALIC, RESET = "\x1b[1m", "\x1b[3m", "\x1b[0m"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None,
                file: TextIO | None = None) -> None:
    """Print a table (``None`` cells are empty; a short row is padded, a long one gets columns without a
    header, as Rich does); on a terminal the header is bold and the title italic."""
    out = sys.stdout if file is None else file
    cells = [[str(c) if c is not None else "" for c in row] for row in rows]
    width = max([len(headers), *(len(row) for row in cells)])
    headers = [*headers, *[""] * (width - len(headers))]
    for row in cells:
        if len(row) < width:
            row.extend([""] * (width - len(row)))
    styled = _styled(out)
    lines = plain_lines(headers, cells)
    if lines is None:
        lines = rich_lines(headers, cells, styled)
    elif styled:
        lines[0] = BOLD + lines[0] + RESET
    if title is not None:
        out.write((ITALIC + title + RESET if styled else title) + "\n")
    out.write("".join(line + "\n" for line in lines))


def plain_lines(headers: Sequence[str], cells: list[list[str]]) -> list[str] | None:
    """The header and rows as lines, each right-stripped; None unless every cell is printable ASCII."""
    text = "".join(headers) + "".join("".join(row) for row in cells)
    if not (text.isascii() and text.isprintable()):
        return None
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    gap = " " * GAP
    # every row has len(headers) cells (print_table pads them): map() pairs them with the widths
    return [gap.join(map(str.ljust, row, widths)).rstrip() for row in (headers, *cells)]


def rich_lines(headers: Sequence[str], cells: list[list[str]], styled: bool = False) -> list[str]:
    """The same table laid out by Rich (for text :func:`plain_lines` does not take)."""
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    widths = [max([cell_len(h), *(cell_len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    width = max(sum(widths) + GAP * len(widths) + 2, 80)
    console = Console(highlight=False, width=width, force_terminal=styled,
                      color_system="standard" if styled else None)
    table = Table(box=None, pad_edge=False, padding=(0, GAP, 0, 0), show_edge=False,
                  header_style="bold" if styled else "")
    for header in headers:
        table.add_column(Text(header), no_wrap=True, overflow="ignore")
    for row in cells:
        table.add_row(*(Text(c) for c in row))
    with console.capture() as captured:
        console.print(table)
    return [line.rstrip() for line in captured.get().splitlines()]


def _styled(out: TextIO) -> bool:
    """Whether ``out`` is a terminal Rich would style (not one with NO_COLOR or TERM=dumb)."""
    if not out.isatty():
        return False
    from rich.console import Console

    return Console(file=out).color_system is not None
