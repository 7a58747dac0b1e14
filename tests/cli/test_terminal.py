"""The command line's text writer (:mod:`cli.terminal`): markup, wrapping, tables, colour."""

from __future__ import annotations

import io
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.terminal import Console, Table, _cell_width, escape, plain, table, wrap

ANSI = re.compile(r"\x1b\[[0-9;]*m")

_text = st.lists(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    ["[", "]", "\\", "[bold]", "[/bold]", "[/]", "[dim]", " ", "\n", "[k1, k2]", "α", "表"]),
    max_size=30).map("".join)


class _Stream(io.StringIO):
    def __init__(self, tty: bool = False, encoding: str = "utf-8") -> None:
        super().__init__()
        self._tty, self._encoding = tty, encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


def _console(stream: _Stream, **kw) -> Console:
    con = Console(**kw)
    con.stream = stream
    return con


def test_markup_styles_known_tags_and_keeps_other_brackets() -> None:
    assert plain("[bold]best[/bold] at [dim]2x[/]") == "best at 2x"
    assert plain("[bold red]no[/bold red]") == "no"
    assert plain("ParallelDim_f(k1)·k2 [k1, k2] [not a style] [/x]") == (
        "ParallelDim_f(k1)·k2 [k1, k2] [not a style] [/x]")
    assert plain("\\[bold] stays") == "[bold] stays"
    assert plain("\\\\[bold]x[/bold]") == "\\x"  # a pair of backslashes is one
    assert plain("\\\\[not a style]") == "\\[not a style]"
    assert plain("[bold]unclosed") == "unclosed"


@given(_text)
def test_escaped_text_prints_as_written(text: str) -> None:
    assert plain(escape(text)) == text


@given(_text, st.integers(1, 40))
def test_wrapping_keeps_every_word_and_the_width(text: str, width: int) -> None:
    lines = wrap(text, width)
    assert "".join("".join(line.split()) for line in lines) == "".join(plain(text).split())
    assert all(_cell_width(line) <= max(width, 2) for line in lines)
    assert len(lines) >= plain(text).count("\n") + 1


def test_wrapping_breaks_at_spaces_and_keeps_an_indent() -> None:
    assert wrap("hybrid wins: 2.373x beats token-only", 14) == [
        "hybrid wins:", "2.373x beats", "token-only"]
    assert wrap("  target_decode: measured", 40) == ["  target_decode: measured"]
    assert wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    with pytest.raises(ValueError, match="width must be at least 1"):
        wrap("x", 0)


def test_a_table_draws_a_heavy_header_box_with_justified_columns() -> None:
    t = table("Best", ("", "k1", "speedup"), [("[bold]optimum[/bold]", "3", "2.373x"),
                                              ("token-only", "1", "1.390x")],
              justify=("left", "right", "right"))
    lines = t.lines(120)
    assert lines[1:] == [
        "┏━━━━━━━━━━━━┳━━━━┳━━━━━━━━━┓",
        "┃            ┃ k1 ┃ speedup ┃",
        "┡━━━━━━━━━━━━╇━━━━╇━━━━━━━━━┩",
        "│ optimum    │  3 │  2.373x │",
        "│ token-only │  1 │  1.390x │",
        "└────────────┴────┴─────────┘",
    ]
    assert lines[0].strip() == "Best" and len(lines[0]) == len(lines[1])
    assert abs(lines[0].index("B") - (len(lines[0]) - lines[0].index("t") - 1)) <= 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.text(st.sampled_from("ab cd1.-[]αx "), max_size=30),
                         min_size=3, max_size=3), max_size=5),
       st.integers(20, 100), st.booleans())
def test_a_table_fits_its_width_and_loses_no_word(rows: list[list[str]], width: int,
                                                  no_wrap: bool) -> None:
    t = table("a title that may wrap", ("config", "predicted value", "n"), rows,
              justify=("left", "right", "center"), no_wrap=no_wrap)
    lines = t.lines(width)
    body = lines[lines.index(next(x for x in lines if x.startswith("┡"))) + 1:-1]
    assert len({_cell_width(x) for x in lines[lines.index(next(
        x for x in lines if x.startswith("┏"))):]}) == 1  # every box line as wide
    floor = 10 + sum(max([1] + [len(w) for c in col for w in c.split()])
                     for col in zip(*rows, ("config", "predicted value", "n"), strict=False))
    if floor <= width:
        assert all(_cell_width(x) <= width for x in lines)
    for j in range(3):  # each column, read down, holds its cells' words in order
        down = "".join(x.split("│")[j + 1].replace(" ", "") for x in body)
        assert down == "".join("".join(row[j].split()) for row in rows)


def test_a_table_too_wide_wraps_cells_instead_of_cutting_them() -> None:
    t = table(None, ("config", "measured"), [("async k1=2 k2=3", "0.873")], no_wrap=True)
    narrow = t.lines(22)
    assert max(len(x) for x in narrow) <= 22
    assert [x.split("│")[1].strip() for x in narrow[3:-1]] == ["async", "k1=2", "k2=3"]
    assert "…" not in "".join(narrow)
    with pytest.raises(ValueError, match="needs 2 cells"):
        t.add_row("only one")
    with pytest.raises(ValueError, match="justify must be left, right or center"):
        Table().add_column("x", justify="middle")
    with pytest.raises(ValueError, match="at least one column"):
        Table().lines(80)


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm")
    pipe, tty = _Stream(), _Stream(tty=True)
    con = Console()
    con.stream, con.color = pipe, False
    con.print("[bold]best[/bold] 2x")
    assert pipe.getvalue() == "best 2x\n"
    con = _console(tty, color=True, width=80)
    con.print("[bold]best[/bold] 2x")
    assert tty.getvalue() == "\x1b[1mbest\x1b[0m 2x\n"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Console(color=None).color
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert Console(color=None).color


def test_width_is_the_terminals_or_120_in_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    import cli.terminal as term

    assert term._width(_Stream()) == term.PIPE_WIDTH == 120
    monkeypatch.setenv("COLUMNS", "64")
    assert term._width(_Stream()) == 64
    out = _Stream()
    con = _console(out, width=30, color=False)
    con.print("word " * 20)
    assert all(len(x) <= 30 for x in out.getvalue().splitlines())
    out = _Stream()
    con = _console(out, width=30, color=False)
    con.print("word " * 20, soft_wrap=True)
    assert len(out.getvalue().splitlines()) == 1


def test_an_ascii_stream_gets_an_ascii_box() -> None:
    import cli.terminal as term

    assert term._box_for(_Stream(encoding="ascii")) == "ascii"
    assert term._box_for(_Stream()) == "unicode"
    out = _Stream(encoding="ascii")
    _console(out, width=80, color=False).print(table(None, ("a",), [("1",)]))
    out.getvalue().encode("ascii")  # nothing the stream cannot write
    assert out.getvalue().splitlines()[0] == "+---+"


def test_colour_codes_wrap_each_styled_run() -> None:
    t = table(None, ("x",), [("[red]bad[/red] ok",)])
    coloured = t.lines(40, color=True)
    assert "\x1b[31mbad\x1b[0m ok" in "".join(coloured)
    assert [ANSI.sub("", x) for x in coloured] == t.lines(40)
