"""Read cells from a file or stdin: one JSON object, a JSON array of cells, or JSONL.

A server's own list or search response (``{"results": [cell, ...], "returned": ..}``, S1's
``GET /memories`` and ``POST /memories/search``) and a ``{"memories": [...]}`` export are
recognised as wrappers: their elements are the cells. An object with ``content`` or ``id`` is
always read as one cell, so a cell is never mistaken for a wrapper.

The format is recognised from the first non-blank line: if it holds a complete JSON value the input
is JSONL (streamed line by line, so a 100,000-cell export never sits in memory twice); otherwise the
whole input is one JSON document. Every cell carries the line it starts on, so a problem can be
reported as ``file:line``. NaN and Infinity are refused: they are not JSON (RFC 8259).
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn

STDIN_NAME = "<stdin>"
_WHITESPACE = re.compile(r"[ \t\n\r]*")
#: Members that hold the cells of a page or an export (S1 list and search responses).
WRAPPER_MEMBERS = ("results", "memories")


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


class Unreadable(Exception):
    """The whole input cannot be read as JSON (missing file, not UTF-8, not JSON)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One cell as read, with the 1-based line where it starts and its position in the input."""

    line: int
    index: int
    value: object


@dataclass(frozen=True, slots=True)
class LineError:
    """One JSONL line that is not JSON; the other lines are still read."""

    line: int
    message: str


def source_name(path: str | Path) -> str:
    """How an input is named in reports: ``-`` is ``<stdin>``."""
    return STDIN_NAME if str(path) == "-" else str(path)


def read_entries(path: str | Path, stdin: IO[str] | None = None) -> Iterator[Entry | LineError]:
    """The cells of one input; raises ``Unreadable`` when it cannot be opened or parsed at all."""
    if str(path) == "-":
        yield from _read_stdin(stdin)
        return
    try:
        with open(path, encoding="utf-8-sig") as stream:
            yield from parse_lines(stream)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_stdin(stdin: IO[str] | None) -> Iterator[Entry | LineError]:
    """stdin as UTF-8 whatever the locale says; a plain text stream (tests) is used as it is."""
    stream = stdin if stdin is not None else sys.stdin
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        yield from parse_lines(stream)
        return
    wrapper = io.TextIOWrapper(buffer, encoding="utf-8-sig")
    try:
        yield from parse_lines(wrapper)
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text ({exc.reason})") from None
    finally:
        wrapper.detach()  # leave sys.stdin usable


def parse_lines(lines: Iterable[str]) -> Iterator[Entry | LineError]:
    """Entries of an input given as lines, each with its newline (as a text file yields them)."""
    iterator = iter(lines)
    first_no, first = 0, ""
    for line in iterator:
        first_no += 1
        if line.strip():
            first = line
            break
    if not first:
        raise Unreadable("empty input: no JSON value")
    try:
        value = _DECODER.decode(first)
    except (ValueError, RecursionError):
        yield from _document_entries(first + "".join(iterator), first_no)
        return
    rest = _jsonl_entries(iterator, first_no + 1, start_index=1)
    following = next(rest, None)
    if following is None and isinstance(value, list):
        yield from _document_entries(first, first_no)  # an array written on one line
        return
    if wrapper_member(value) is not None:
        yield from _document_entries(first, first_no)  # a wrapper written on one line
    else:
        yield Entry(first_no, 0, value)
    if following is not None:
        yield following
        yield from rest


def _jsonl_entries(lines: Iterator[str], line_no: int, start_index: int) -> Iterator[Entry | LineError]:
    index = start_index
    for number, line in enumerate(lines, start=line_no):
        if not line.strip():
            continue
        try:
            value = _DECODER.decode(line)
        except (ValueError, RecursionError) as exc:
            yield LineError(number, f"not JSON: {_describe(exc, None)}")
            index += 1
            continue
        for cell in _unwrapped(value):
            yield Entry(number, index, cell)
            index += 1


def _document_entries(text: str, first_line: int) -> Iterator[Entry]:
    """One JSON document: a single cell, or an array whose elements are the cells."""
    start = _WHITESPACE.match(text, 0)
    position = start.end() if start else 0
    try:
        value, end = _DECODER.raw_decode(text, position)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"not JSON: {_describe(exc, first_line)}") from None
    tail = _WHITESPACE.match(text, end)
    if tail is not None and tail.end() != len(text):
        line = first_line + text.count("\n", 0, tail.end())
        raise Unreadable(f"not JSON: extra data after the document, line {line}")
    line = first_line + text.count("\n", 0, position)
    member = wrapper_member(value)
    if member is not None:
        position = _member_position(text, position, member)
        line = first_line + text.count("\n", 0, position)
    elif not isinstance(value, list):
        yield Entry(line, 0, value)
        return
    yield from _array_elements(text, position + 1, line)


def wrapper_member(value: object) -> str | None:
    """The member holding the cells when ``value`` is a list or search response (or an export)."""
    if not isinstance(value, dict) or "content" in value or "id" in value:
        return None
    for member in WRAPPER_MEMBERS:
        if isinstance(value.get(member), list):
            return member
    return None


def _unwrapped(value: object) -> list[object]:
    member = wrapper_member(value)
    cells = value.get(member) if member is not None and isinstance(value, dict) else None
    return list(cells) if isinstance(cells, list) else [value]


def _member_position(text: str, position: int, member: str) -> int:
    """Where the array of ``member`` starts in the object at ``position`` (known to be valid JSON)."""
    position += 1  # past "{"
    while True:
        skip = _WHITESPACE.match(text, position)
        start = skip.end() if skip else position
        key, end = _DECODER.raw_decode(text, start)
        skip = _WHITESPACE.match(text, end)
        colon = skip.end() if skip else end  # text[colon] == ":"
        skip = _WHITESPACE.match(text, colon + 1)
        start = skip.end() if skip else colon + 1
        if key == member:
            return start
        _value, end = _DECODER.raw_decode(text, start)
        skip = _WHITESPACE.match(text, end)
        position = (skip.end() if skip else end) + 1  # past ","


def _array_elements(text: str, position: int, line: int) -> Iterator[Entry]:
    """Re-scan an array already known to be valid JSON, to learn the line each element starts on."""
    index = 0
    while True:
        skip = _WHITESPACE.match(text, position)
        start = skip.end() if skip else position
        if text[start] == "]":
            return
        line += text.count("\n", position, start)
        value, end = _DECODER.raw_decode(text, start)
        yield Entry(line, index, value)
        index += 1
        line += text.count("\n", start, end)
        skip = _WHITESPACE.match(text, end)
        position = skip.end() if skip else end
        if text[position] == ",":
            position += 1


def _describe(exc: ValueError | RecursionError, first_line: int | None) -> str:
    """The decoder's message with its position; no line for a JSONL line (the report gives it)."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to decode"
    if not isinstance(exc, json.JSONDecodeError):
        return str(exc)
    if first_line is None:
        return f"{exc.msg} (column {exc.colno})"
    return f"{exc.msg} (line {exc.lineno + first_line - 1}, column {exc.colno})"
