"""Text for people: a small markup, word wrapping and boxed tables, on a terminal or a pipe.

The command line prints its answers through this module instead of rich, whose import
alone took about a tenth of ``specmodel optimize --budget 16``'s start-up (issue 15;
measured in docs/results.md); rich still draws the progress bars of the long commands.
What it does:

* **Markup**: ``[bold]``, ``[dim]``, ``[italic]``, ``[underline]`` and the colours
  ``[red]``, ``[green]``, ``[yellow]``, ``[blue]``, ``[magenta]``, ``[cyan]`` (several in
  one tag: ``[bold red]``), closed by ``[/bold]`` or ``[/]``.  A bracket that is not one
  of these tags is printed as it is (``[k1, k2]`` stays); ``\\[`` prints a literal
  ``[`` (:func:`escape` writes it).
* **Colour** only where it can be seen: on a terminal, unless ``NO_COLOR`` is set or
  ``TERM`` is ``dumb``; ``FORCE_COLOR`` turns it on anywhere.  Pipes, files and CI logs get
  plain text.
* **Width**: the terminal's (``COLUMNS`` wins); 120 columns when the output is not a
  terminal.  Lines of prose wrap at word boundaries; tables shrink their widest
  wrappable columns to fit, wrapping the cells, and are drawn with a heavy header box
  (ASCII when the stream's encoding has no box-drawing characters).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

__all__ = ["STYLES", "Console", "Table", "escape", "plain", "table", "wrap"]

STYLES: dict[str, str] = {
    "bold": "1", "dim": "2", "italic": "3", "underline": "4",
    "red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35", "cyan": "36",
}
"""The markup's style names and their ANSI SGR codes."""

PIPE_WIDTH = 120
"""Columns when the output is not a terminal and ``COLUMNS`` is not set."""

_TAG = re.compile(r"(\\*)\[(/?)([a-z ]*)\]")

Span = tuple[str, tuple[str, ...]]
"""A run of text and the SGR codes in force over it."""


def escape(text: object) -> str:
    """``text`` with every bracket that would read as a tag escaped (and the backslashes
    before it doubled), so it prints as written: paths, user input, messages."""
    return _TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(0)[len(m.group(1)):], str(text))


def _parse(markup: str) -> list[Span]:
    """The runs of ``markup`` with their styles: known tags open and close styles, an
    unknown bracket is text, ``\\[`` is a literal bracket."""
    spans: list[Span] = []
    stack: list[tuple[str, tuple[str, ...]]] = []  # (tag, codes it added)
    pos = 0

    def codes() -> tuple[str, ...]:
        return tuple(c for _, cs in stack for c in cs)

    def add(text: str) -> None:
        if text:
            spans.append((text, codes()))

    for m in _TAG.finditer(markup):
        slashes, closing, name = m.group(1), m.group(2), m.group(3).strip()
        tag = m.group(0)[len(slashes):]
        add(markup[pos:m.start()] + "\\" * (len(slashes) // 2))
        pos = m.end()
        if len(slashes) % 2:  # an escaped bracket: the tag is text
            add(tag)
            continue
        words = name.split()
        if closing:
            if not name and stack:
                stack.pop()
                continue
            at = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == name), None)
            if at is not None:
                del stack[at]
                continue
        elif words and all(w in STYLES for w in words):
            stack.append((name, tuple(STYLES[w] for w in words)))
            continue
        add(tag)
    add(markup[pos:])
    return spans


def plain(markup: str) -> str:
    """``markup`` as it prints without colour."""
    return "".join(t for t, _ in _parse(markup))


def _cell_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


@dataclass
class _Styled:
    """Characters and the styles over each: what wrapping cuts and justification pads."""

    chars: list[str] = field(default_factory=list)
    """One entry per character."""
    styles: list[tuple[str, ...]] = field(default_factory=list)
    """The SGR codes over each character."""

    @classmethod
    def of(cls, markup: str) -> _Styled:
        s = cls()
        for text, codes in _parse(markup):
            s.chars.extend(text)
            s.styles.extend([codes] * len(text))
        return s

    def text(self) -> str:
        return "".join(self.chars)

    def cut(self, a: int, b: int) -> _Styled:
        return _Styled(self.chars[a:b], self.styles[a:b])

    def render(self, color: bool) -> str:
        if not color:
            return self.text()
        out, current = [], ()
        for ch, codes in zip(self.chars, self.styles, strict=True):
            if codes != current:
                out.append("\x1b[0m" if current else "")
                if codes:
                    out.append(f"\x1b[{';'.join(codes)}m")
                current = codes
            out.append(ch)
        if current:
            out.append("\x1b[0m")
        return "".join(out)


def _wrap_styled(s: _Styled, width: float) -> list[_Styled]:
    """``s`` cut into lines of at most ``width`` columns at spaces (a word wider than the
    line is cut inside it); the text's own line breaks and each paragraph's indent are
    kept."""
    text = s.text()
    lines: list[_Styled] = []
    start = 0
    for para in text.split("\n"):
        line_start: int | None = None
        line_end = line_w = 0
        words = [(start + m.start(), start + m.end()) for m in re.finditer(r"\S+", para)]
        if words:  # the first word carries the paragraph's indent
            words[0] = (start, words[0][1])
        for a, b in words:
            while a < b:
                word_w = _cell_width(text[a:b])
                if line_start is None:
                    if word_w <= width:
                        line_start, line_end, line_w = a, b, word_w
                        break
                    cut, w = a, 0
                    while cut < b and w + _cell_width(text[cut]) <= width:
                        w += _cell_width(text[cut])
                        cut += 1
                    cut = max(cut, a + 1)
                    lines.append(s.cut(a, cut))
                    a = cut
                    continue
                gap_w = _cell_width(text[line_end:a])
                if line_w + gap_w + word_w <= width:
                    line_end, line_w = b, line_w + gap_w + word_w
                    break
                lines.append(s.cut(line_start, line_end))
                line_start = None
        if line_start is not None:
            lines.append(s.cut(line_start, line_end))
        elif not words:
            lines.append(_Styled())
        start += len(para) + 1
    return lines


def wrap(markup: str, width: int) -> list[str]:
    """The plain lines of ``markup`` wrapped at ``width`` columns (``width`` ≥ 1)."""
    if width < 1:
        raise ValueError(f"width must be at least 1 column, got {width}")
    return [line.text() for line in _wrap_styled(_Styled.of(markup), width)]


_BOXES = {
    "unicode": ("┏━┳┓", "┃┃┃", "┡━╇┩", "│││", "└─┴┘"),
    "ascii": ("+-++", "|||", "+=++", "|||", "+-++"),
}
"""Box characters: top, header, header rule, body, bottom (left, fill, joint, right —
or left, joint, right for the rows of cells)."""


@dataclass
class Table:
    """A table of markup cells: a title, columns with a justification each, rows."""

    title: str | None = None
    """Centred over the table (italic on a terminal); None for none."""
    columns: list[str] = field(default_factory=list)
    """Column headers (markup; bold on a terminal)."""
    justify: list[str] = field(default_factory=list)
    """Per column: ``left``, ``right`` or ``center``."""
    no_wrap: list[bool] = field(default_factory=list)
    """Per column: True keeps its cells on one line even when the table is too wide."""
    rows: list[list[str]] = field(default_factory=list)
    """Cells (markup), one list per row."""

    def add_column(self, header: str, *, justify: str = "left", no_wrap: bool = False) -> None:
        """One more column."""
        if justify not in ("left", "right", "center"):
            raise ValueError(f"justify must be left, right or center, got {justify!r}")
        self.columns.append(header)
        self.justify.append(justify)
        self.no_wrap.append(no_wrap)

    def add_row(self, *cells: object) -> None:
        """One more row: one cell per column."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of this table needs {len(self.columns)} cells, "
                             f"got {len(cells)}")
        self.rows.append([str(c) for c in cells])

    def lines(self, width: int, *, color: bool = False, box: str = "unicode") -> list[str]:
        """The table as lines of at most ``width`` columns where its cells can wrap to
        fit (a column of unbreakable cells keeps what it needs)."""
        if not self.columns:
            raise ValueError("a table needs at least one column")
        header = [_Styled.of(f"[bold]{h}[/bold]") for h in self.columns]
        body = [[_Styled.of(c) for c in row] for row in self.rows]
        n = len(self.columns)

        def longest_word(c: _Styled) -> int:
            return max((_cell_width(w) for w in c.text().split()), default=0)

        def widest_line(c: _Styled) -> int:
            return max(_cell_width(x) for x in c.text().split("\n"))

        widths = [max(widest_line(c) for c in [header[j], *(r[j] for r in body)])
                  for j in range(n)]
        # what a column can shrink to: first its longest word, or its widest cell where
        # cells should not wrap; then, if the table is still too wide, its longest word
        # there too (headers always may wrap between words).  Nothing is cut off.
        soft = [max([1, longest_word(header[j])] + [
            widest_line(r[j]) if self.no_wrap[j] else longest_word(r[j]) for r in body])
            for j in range(n)]
        hard = [max([1, longest_word(header[j])] + [longest_word(r[j]) for r in body])
                for j in range(n)]
        for floor in (soft, hard):
            while sum(widths) + 3 * n + 1 > width:
                shrinkable = [j for j in range(n) if widths[j] > floor[j]]
                if not shrinkable:
                    break
                j = max(shrinkable, key=lambda k: widths[k])
                widths[j] -= 1
        top, head, rule, mid, bottom = _BOXES[box]
        total = sum(widths) + 3 * n + 1

        def cells(row: list[_Styled], *, bottom: bool = False) -> list[list[str]]:
            wrapped = [_wrap_styled(c, widths[j]) for j, c in enumerate(row)]
            height = max(len(w) for w in wrapped)
            if bottom:  # headers sit on the rule below them
                wrapped = [[_Styled()] * (height - len(w)) + w for w in wrapped]
            out = []
            for k in range(height):
                parts = []
                for j, w in enumerate(wrapped):
                    piece = w[k] if k < len(w) else _Styled()
                    pad = widths[j] - _cell_width(piece.text())
                    left = {"left": 0, "right": pad, "center": pad // 2}[self.justify[j]]
                    parts.append(" " * left + piece.render(color) + " " * (pad - left))
                out.append(parts)
            return out

        def rule_line(chars: str) -> str:
            left, fill, joint, right = chars
            return left + joint.join(fill * (w + 2) for w in widths) + right

        out: list[str] = []
        if self.title:
            for t in _wrap_styled(_Styled.of(f"[italic]{self.title}[/italic]"), total):
                pad = total - _cell_width(t.text())
                out.append(" " * (pad // 2) + t.render(color) + " " * (pad - pad // 2))
        out.append(rule_line(top))
        for parts in cells(header, bottom=True):
            out.append(head[0] + " " + f" {head[1]} ".join(parts) + " " + head[2])
        out.append(rule_line(rule))
        for row in body:
            for parts in cells(row):
                out.append(mid[0] + " " + f" {mid[1]} ".join(parts) + " " + mid[2])
        out.append(rule_line(bottom))
        return out


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def _width(stream: TextIO) -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if stream.isatty():
        return shutil.get_terminal_size((80, 24)).columns
    return PIPE_WIDTH


def _box_for(stream: TextIO) -> str:
    try:
        "┏━┃│└".encode(getattr(stream, "encoding", None) or "utf-8")
    except (LookupError, UnicodeEncodeError):
        return "ascii"
    return "unicode"


class Console:
    """Where a command's text goes: stdout (or stderr), at the stream's width, in colour
    only where it is seen."""

    def __init__(self, *, stderr: bool = False, width: int | None = None,
                 color: bool | None = None) -> None:
        self.stream: TextIO = sys.stderr if stderr else sys.stdout
        """The stream written to."""
        self.width = width if width is not None else _width(self.stream)
        """Columns a line may take."""
        self.color = color if color is not None else _wants_color(self.stream)
        """Whether styles are written as ANSI escape codes."""

    def print(self, *objects: str | Table, soft_wrap: bool = False) -> None:
        """Print markup text (wrapped at the width unless ``soft_wrap``) and tables; text
        arguments side by side are joined by a space."""
        lines: list[str] = []
        texts: list[str] = []

        def flush() -> None:
            if texts:
                s = _Styled.of(" ".join(texts))
                # soft wrap: only the text's own line breaks (the terminal wraps the rest)
                parts = _wrap_styled(s, math.inf if soft_wrap else max(self.width, 1))
                lines.extend(p.render(self.color) for p in parts)
                texts.clear()

        for o in objects:
            if isinstance(o, Table):
                flush()
                lines.extend(o.lines(self.width, color=self.color, box=_box_for(self.stream)))
            else:
                texts.append(str(o))
        flush()
        self.stream.write("\n".join(lines) + "\n")


def table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[object]] = (),
          *, justify: str | Sequence[str | None] | None = None,
          no_wrap: bool = False) -> Table:
    """A :class:`Table` with the given columns and rows; ``justify`` is one value for
    every column or one per column (None: left)."""
    t = Table(title=title)
    just = [justify] * len(columns) if justify is None or isinstance(justify, str) else justify
    if len(just) != len(columns):
        raise ValueError(f"justify names {len(just)} columns, the table has {len(columns)}")
    for col, j in zip(columns, just, strict=True):
        t.add_column(col, justify=j or "left", no_wrap=no_wrap)
    for row in rows:
        t.add_row(*row)
    return t
