"""Tables that keep every column when the output is piped.

rich lays out for 80 columns whenever stdout is not a terminal, so `polar compare ... | less -S`,
`> report.txt` or `| grep` got tables with columns cut or folded. When stdout is not a terminal
and `COLUMNS` does not set a width, `print_table` prints a table at its natural width instead
(a pager or an editor can scroll it); on a terminal, it fits the terminal as before.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

PIPED_MAX_WIDTH = 10_000  # the widest a piped table may lay out; no real table comes near it


def full_width(console: Console) -> bool:
    """True when tables print at their natural width: not a terminal, and no COLUMNS set."""
    return not console.is_terminal and not os.environ.get("COLUMNS")


def print_table(console: Console, table: Table) -> None:
    """`console.print(table)`, at the table's natural width when `full_width(console)`."""
    if not full_width(console):
        console.print(table)
        return
    from rich.segment import Segments

    width = console.measure(table, options=console.options.update_width(PIPED_MAX_WIDTH)).maximum
    lines = console.render(table, console.options.update_width(width))
    console.print(Segments(lines), crop=False)  # crop=False: print() would cut it at console.width
