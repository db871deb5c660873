"""Edits of a source text by position, applied all at once, and the unified diff they make.

Positions come from the syntax tree: 1-based lines, columns in UTF-8 bytes (what `ast` gives).
`SourceText` turns them into character offsets of the text as read, line endings included, so
an edit replaces exactly the characters the node spans and nothing else moves.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (character offsets) with `text`; start == end inserts."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Hunk:
    """The lines an edit touches, as a review suggestion names them: lines start..end (1-based,
    inclusive) of the original file become `replacement` (no trailing line break)."""

    start_line: int
    end_line: int
    replacement: str

    def to_dict(self) -> dict:
        return {"start_line": self.start_line, "end_line": self.end_line, "replacement": self.replacement}


class EditConflict(ValueError):
    """Two edits of one text overlap."""


@dataclass
class SourceText:
    """One file's text, with offsets for the tree's positions."""

    text: str
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        starts = [0]
        for line in self.text.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        self._starts = starts

    @property
    def line_count(self) -> int:
        return len(self._starts) - 1

    def line(self, lineno: int) -> str:
        """Line `lineno` (1-based) without its line break."""
        start, end = self._starts[lineno - 1], self._starts[lineno]
        return self.text[start:end].rstrip("\r\n")

    def line_start(self, lineno: int) -> int:
        """The offset where line `lineno` starts (one past the last line: the text's end)."""
        lineno = max(1, min(lineno, len(self._starts)))
        return self._starts[lineno - 1]

    def line_end(self, lineno: int) -> int:
        """The offset just past line `lineno`'s line break."""
        return self._starts[min(lineno, len(self._starts) - 1)]

    def offset(self, lineno: int, col_bytes: int) -> int:
        """The character offset of (line, column in UTF-8 bytes)."""
        line = self.line(lineno)
        col = len(line.encode("utf-8")[:col_bytes].decode("utf-8", errors="ignore"))
        return self._starts[lineno - 1] + col

    def span(self, node) -> tuple[int, int]:
        """The offsets a syntax node spans."""
        return (self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))

    def segment(self, node) -> str:
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        """The 1-based line holding `offset`."""
        lo, hi = 0, len(self._starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def newline(self) -> str:
        """The line break this file uses (its first one), so an inserted line matches."""
        for line in self.text.splitlines(keepends=True):
            if line.endswith("\r\n"):
                return "\r\n"
            if line.endswith(("\n", "\r")):
                return line[-1]
        return "\n"


def apply(text: str, edits: list[Edit]) -> str:
    """`text` with every edit made. Identical edits count once (two fixes adding one import);
    overlapping ones raise EditConflict."""
    # insertions at one offset keep the order they were given in (an `if` line, then the
    # indentation of the line it guards)
    ordered = sorted(dict.fromkeys(edits), key=lambda e: (e.start, e.end))
    out, at = [], 0
    for edit in ordered:
        if edit.start < at or edit.end < edit.start or edit.end > len(text):
            raise EditConflict(f"edit at {edit.start}-{edit.end} overlaps another")
        out.append(text[at:edit.start])
        out.append(edit.text)
        at = edit.end
    out.append(text[at:])
    return "".join(out)


def hunks(source: SourceText, edits: list[Edit]) -> list[Hunk]:
    """The edits as whole-line replacements of the original, one per group of touching lines:
    what a review suggestion shows. An insertion at a line's start is a suggestion on that line
    (the new lines, then the line as it was)."""
    groups: list[list[Edit]] = []
    for edit in sorted(dict.fromkeys(edits), key=lambda e: (e.start, e.end)):
        first = source.line_of(edit.start)
        if groups and first <= _last_line(source, groups[-1][-1]):
            groups[-1].append(edit)
        else:
            groups.append([edit])
    out = []
    for group in groups:
        first = source.line_of(group[0].start)
        last = max(_last_line(source, e) for e in group)
        base = source.line_start(first)
        stop = source.line_end(last)
        old = source.text[base:stop]
        moved = [Edit(e.start - base, e.end - base, e.text) for e in group]
        new = apply(old, moved)
        out.append(Hunk(first, last, _strip_break(new)))
    return out


def _last_line(source: SourceText, edit: Edit) -> int:
    if edit.end > edit.start and source.line_start(source.line_of(edit.end)) == edit.end:
        return source.line_of(edit.end) - 1  # ends at a line's start: the line before is the last
    return source.line_of(edit.end) if edit.end < len(source.text) else source.line_of(max(edit.end - 1, 0))


def _strip_break(text: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if text.endswith(ending):
            return text[:-len(ending)]
    return text


def unified_diff(path: str, old: str, new: str) -> str:
    """The change as `git diff` shows it (a/ and b/ prefixes, three lines of context), "" when
    nothing changed."""
    if old == new:
        return ""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)
