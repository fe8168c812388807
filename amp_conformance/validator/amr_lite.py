"""``validate --profile amr-lite``: memory files in the AMR-lite line format (rules ``AMR-LITE-NN``).

An entry is a line that starts (after indentation, a list marker and an opening backtick, as
Markdown memory files write them) with one of the tags ``[type:``, ``[src:``, ``[when:``, ``[rec:``;
any other line is prose. An entry-looking line that does not parse is a problem, never skipped.
Every line, prose included, is searched for secrets. Supersession markers are linked across all
the inputs of one run, so MEMORY.md and MEMORY_ARCHIVE.md can be checked together. The parsed
entries are kept for ``--format json`` (the validator doubles as an AMR-lite normalizer).

The AMR text's own words are not entries: a template line (every tag value a placeholder such as
``{fact|instruction|...}``, ``YYYY-MM-DD`` or ``…``, or placeholder tags before ``<content>``) is
skipped wherever it is, and so is every entry-looking line of the canonical drop-in block (from
its heading ``## Memory writing rules`` to its closing ``<!-- memory rules vN ... -->`` comment:
the template and the four examples). Without that closing comment the heading hides nothing: the
lines under it are held back until the comment, another heading or the end of the file, then
checked as entries. Both kinds are counted as ``template_lines``.
"""

from __future__ import annotations

import hashlib
import io
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from os import PathLike
from typing import IO, Any, Final

from amp_conformance.validator.profile_report import ProfileReport
from amp_conformance.validator.report import InputError
from amp_conformance.validator.secrets import Secret, find_secrets

PROFILE: Final = "amr-lite"
TYPES: Final = ("fact", "instruction", "preference", "decision", "gotcha")
SOURCES: Final = ("stated", "derived", "fetched", "inferred")
TAGS: Final = ("type", "src", "when", "rec")
STDIN_NAME: Final = "<stdin>"

_LOOKS = re.compile(r"[ \t]*(?:[-*+][ \t]+|\d{1,9}[.)][ \t]+)?(`?)\[(?:type|src|when|rec):")
_ENTRY = re.compile(
    r"\[type:([^\]\[]*)\][ \t]+\[src:([^\]\[]*)\][ \t]+\[when:([^\]\[]*)\][ \t]+\[rec:([^\]\[]*)\](.*)"
)
_TAG = re.compile(r"\[([A-Za-z_-]+):([^\]\[]*)\]")
_MARKER = re.compile(r"[ \t]*\[(superseded|corrected):([^\]\[]*)\][ \t]*\Z")
_ANY_MARKER = re.compile(r"\[(?:superseded|corrected):")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
#: A placeholder where a tag value or the content goes: a choice ``{a|b}``, ``YYYY-MM-DD``, ``...``, ``<x>``.
_PLACEHOLDER = re.compile(r"\{[^{}]*\|[^{}]*\}|YYYY-MM-DD|\.\.\.|…|<[^<>]+>")
#: The canonical drop-in block of the AMR text: its heading and its closing comment.
_BLOCK_START = re.compile(r"[ \t]{0,3}#{1,6}[ \t]+Memory writing rules[ \t#]*\Z", re.IGNORECASE)
_BLOCK_END = re.compile(r"[ \t]*<!--[ \t]*memory rules v\d+\b", re.IGNORECASE)
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|\Z)")
_RELATIVE = re.compile(
    r"(?i)\b(?:yesterday|today|tomorrow|tonight|now|recently"
    r"|(?:last|next|this|past|coming)\s+(?:week|month|year|night|weekend|quarter|monday|tuesday|wednesday"
    r"|thursday|friday|saturday|sunday)"
    r"|(?:\d+|a|an|one|two|three|four|five|six|seven|few|several|couple\s+of)\s+"
    r"(?:days?|weeks?|months?|years?)\s+(?:ago|from\s+now))\b"
)
_RELATIVE_IN_CONTENT = re.compile(
    r"(?i)\b(?:yesterday|tomorrow|last\s+(?:week|month|year|night)|next\s+(?:week|month|year)"
    r"|(?:\d+|a|an|few|several)\s+(?:days?|weeks?|months?|years?)\s+ago)\b"
)


@dataclass(slots=True)
class AmrEntry:
    """One parsed entry; ``marker_date`` is set only when the marker's date is a real date."""

    source: str
    line: int
    type: str
    src: str
    when: str
    rec: str
    content: str
    status: str
    marker_date: str | None
    marker_column: int | None
    rec_day: date | None
    secrets: tuple[Secret, ...]

    def as_dict(self) -> dict[str, Any]:
        """The normalized entry, secrets masked in every field; the hash is of the content as written."""
        shown = _masked(self.content, self.secrets)
        return {
            "source": self.source,
            "line": self.line,
            "type": _masked(self.type, self.secrets),
            "src": _masked(self.src, self.secrets),
            "when": _masked(self.when, self.secrets),
            "rec": _masked(self.rec, self.secrets),
            "content": shown,
            "content_masked": shown != self.content,
            "status": self.status,
            "marker_date": self.marker_date,
            "content_sha256": hashlib.sha256(self.content.encode("utf-8")).hexdigest(),
        }


def _masked(text: str, secrets: tuple[Secret, ...]) -> str:
    """``text`` with the line's secrets masked (found in the whole line: context a part lacks)."""
    for secret in secrets:
        text = text.replace(secret.value, secret.masked)
    return text


@lru_cache(maxsize=4096)
def calendar_date(text: str) -> date | None:
    """``YYYY-MM-DD`` naming a real day, else None (``date.fromisoformat`` alone also takes ``20260802``)."""
    if not _DATE.match(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _may_be_relative(content: str) -> bool:
    """Cheap test before ``_RELATIVE_IN_CONTENT`` (a case-blind regex costs ~15 µs a line)."""
    lowered = content.lower()
    return (
        "yesterday" in lowered
        or "tomorrow" in lowered
        or "last" in lowered
        or "next" in lowered
        or "ago" in lowered
    )


def _is_relative(text: str) -> bool:
    return _RELATIVE.search(text) is not None


class _Checker:
    """Checks the lines of one run; entries of every input are kept for linking and output."""

    def __init__(self) -> None:
        self.report = ProfileReport(PROFILE)
        self.entries: list[AmrEntry] = []
        self.secrets: tuple[Secret, ...] = ()
        self.templates = 0

    def problem(self, source: str, rule: str, message: str, line: int, column: int) -> None:
        """File a problem; a secret of the current line quoted in the message is masked."""
        self.report.add(source, rule, _masked(message, self.secrets), line=line, column=column)

    def check_lines(self, source: str, lines: Iterable[str]) -> tuple[int, int, int]:
        """Check every line; returns (lines, entry-looking lines, template lines).

        Inside a drop-in block (see the module docstring) entry-looking lines are held in ``held``
        until the block is known to be the canonical one (skipped) or not (checked as entries).
        """
        count = looked = 0
        self.templates = 0
        held: list[tuple[int, str, re.Match[str], tuple[Secret, ...]]] | None = None
        for count, raw in enumerate(lines, start=1):
            text = raw.rstrip("\r\n")
            if held is not None:
                if _BLOCK_END.match(text):
                    self.templates += len(held)
                    held = None
                elif _HEADING.match(text):
                    self._check_held(source, held)
                    held = None
            if held is None and _BLOCK_START.match(text):
                held = []
            self.secrets = secrets = tuple(find_secrets(text))
            for secret in secrets:
                self.problem(
                    source,
                    "AMR-LITE-15",
                    f"{secret.kind} in memory: {secret.masked} (never write secrets, tokens or keys)",
                    count,
                    secret.start + 1,
                )
            looks = _LOOKS.match(text)
            if looks is None:
                continue
            looked += 1
            if held is not None:
                held.append((count, text, looks, secrets))
            else:
                self._check_entry(source, count, text, looks.group(0).rindex("["), looks)
        if held is not None:
            self._check_held(source, held)
        self.secrets = ()
        return count, looked, self.templates

    def _check_held(
        self, source: str, held: list[tuple[int, str, re.Match[str], tuple[Secret, ...]]]
    ) -> None:
        """Lines under a rules heading that turned out not to be the canonical block: entries after all."""
        for number, text, looks, secrets in held:
            self.secrets = secrets
            self._check_entry(source, number, text, looks.group(0).rindex("["), looks)

    def _check_entry(self, source: str, number: int, text: str, start: int, looks: re.Match[str]) -> None:
        match = _ENTRY.match(text, start)
        if match is None:
            column, message = _grammar_problem(text, start)
            self.problem(source, "AMR-LITE-01", message, number, column + 1)
            return
        kind, src, when, rec, rest = match.groups()
        rest_start = match.start(5)
        if looks.group(1) and rest.rstrip().endswith("`"):
            rest = rest.rstrip()[:-1]
        if _is_template((kind, src, when, rec), rest.strip()):
            self.templates += 1
            return
        if rest and rest[0] not in " \t":
            self.problem(
                source, "AMR-LITE-01", "a space separates [rec:…] from the content", number, rest_start + 1
            )
        marker = _MARKER.search(rest) if rest.rstrip().endswith("]") else None  # the test is cheaper
        body = rest[: marker.start()] if marker else rest
        content = body.strip()
        content_column = rest_start + (len(body) - len(body.lstrip())) + 1
        if (again := _TAG.match(content)) is not None and again.group(1) in TAGS:
            self.problem(
                source,
                "AMR-LITE-01",
                f"[{again.group(1)}:…] appears twice: each tag comes once, before the content",
                number,
                content_column,
            )
        if not content:
            self.problem(
                source, "AMR-LITE-02", "the entry has no content after its tags", number, rest_start + 1
            )
        elif ("[superseded:" in content or "[corrected:" in content) and (
            stray := _ANY_MARKER.search(content)
        ):
            self.problem(
                source,
                "AMR-LITE-11",
                "a [superseded:…] or [corrected:…] marker comes once, at the end of the entry",
                number,
                content_column + stray.start(),
            )
        elif _may_be_relative(content) and (relative := _RELATIVE_IN_CONTENT.search(content)):
            self.problem(
                source,
                "AMR-LITE-08",
                f"relative date {relative.group(0)!r} in the content: resolve it to an absolute date",
                number,
                content_column + relative.start(),
            )
        if kind not in TYPES:
            self.problem(
                source,
                "AMR-LITE-03",
                f"type {kind!r} is not one of {', '.join(TYPES)}",
                number,
                match.start(1) + 1,
            )
        if src not in SOURCES:
            self.problem(
                source,
                "AMR-LITE-04",
                f"src {src!r} is not one of {', '.join(SOURCES)}",
                number,
                match.start(2) + 1,
            )
        if kind == "instruction" and src in SOURCES and src != "stated":
            self.problem(
                source,
                "AMR-LITE-14",
                f"type:instruction with src:{src}: only src:stated entries may carry instructions "
                "(record what the source says as type:fact)",
                number,
                match.start(1) + 1,
            )
        when_day = self._date(source, number, match.start(3) + 1, "when", when, allow_unknown=True)
        rec_day = self._date(source, number, match.start(4) + 1, "rec", rec, allow_unknown=False)
        if when_day and rec_day and when_day > rec_day:
            self.problem(
                source,
                "AMR-LITE-09",
                f"when {when} is after rec {rec}: the fact became true after it was written down",
                number,
                match.start(3) + 1,
            )
        status, marker_date, marker_column = "active", None, None
        if marker:
            status = marker.group(1)
            marker_column = rest_start + marker.start(2) + 1
            marker_date = self._marker_date(
                source, number, marker_column, status, marker.group(2), rec, rec_day
            )
        self.entries.append(
            AmrEntry(
                source,
                number,
                kind,
                src,
                when,
                rec,
                content,
                status,
                marker_date,
                marker_column,
                rec_day,
                self.secrets,
            )
        )

    def _date(
        self, source: str, number: int, column: int, tag: str, value: str, *, allow_unknown: bool
    ) -> date | None:
        day = calendar_date(value)
        if day is not None:
            return day
        rule = "AMR-LITE-05" if tag == "when" else "AMR-LITE-06"
        if value == "unknown":
            if not allow_unknown:
                self.problem(source, rule, "rec cannot be unknown: it is the date of writing", number, column)
            return None
        if _is_relative(value):
            self.problem(
                source, "AMR-LITE-07", f"{tag} {value!r} is a relative date: write YYYY-MM-DD", number, column
            )
            return None
        extra = " or unknown" if allow_unknown else ""
        self.problem(
            source, rule, f"{tag} {value!r} is not a calendar date YYYY-MM-DD{extra}", number, column
        )
        return None

    def _marker_date(
        self, source: str, number: int, column: int, kind: str, value: str, rec: str, rec_day: date | None
    ) -> str | None:
        day = calendar_date(value)
        if day is None:
            if _is_relative(value):
                self.problem(
                    source,
                    "AMR-LITE-07",
                    f"{kind} date {value!r} is relative: write YYYY-MM-DD",
                    number,
                    column,
                )
            else:
                self.problem(
                    source,
                    "AMR-LITE-11",
                    f"{kind} date {value!r} is not a calendar date YYYY-MM-DD",
                    number,
                    column,
                )
            return None
        if rec_day is not None and day < rec_day:
            self.problem(
                source,
                "AMR-LITE-13",
                f"{kind}:{value} is before the entry's own rec {rec}: a replacement is written later",
                number,
                column,
            )
        return value

    def link_markers(self) -> None:
        """AMR-LITE-12: every marker's date is the ``rec`` of another entry (its replacement)."""
        self.secrets = ()
        by_rec: dict[str, list[AmrEntry]] = defaultdict(list)
        for entry in self.entries:
            by_rec[entry.rec].append(entry)
        for entry in self.entries:
            if entry.marker_date is None or entry.marker_column is None:
                continue
            if not any(other is not entry for other in by_rec.get(entry.marker_date, ())):
                self.problem(
                    entry.source,
                    "AMR-LITE-12",
                    f"{entry.status}:{entry.marker_date} links to no entry: no other entry has "
                    f"rec:{entry.marker_date} (add the replacing entry, or fix the date)",
                    entry.line,
                    entry.marker_column,
                )


def _is_template(values: tuple[str, str, str, str], content: str) -> bool:
    """The AMR text's template line, not an entry: every tag value a placeholder, or placeholder
    tags before a placeholder content (``<content>``). One placeholder left in a real entry is not."""
    placeholders = [_PLACEHOLDER.fullmatch(value.strip()) is not None for value in values]
    if all(placeholders):
        return True
    return (
        any(placeholders)
        and _PLACEHOLDER.fullmatch(content) is not None
        and not any(calendar_date(value) for value in values)
    )


def _grammar_problem(text: str, start: int) -> tuple[int, str]:
    """Where and why an entry-looking line does not parse (0-based column)."""
    tags: list[tuple[str, int]] = []
    position = start
    while match := _TAG.match(text, position):
        tags.append((match.group(1), match.start()))
        position = match.end() + len(text[match.end() :]) - len(text[match.end() :].lstrip(" \t"))
    names = [name for name, _ in tags]
    for index, expected in enumerate(TAGS):
        if index >= len(tags):
            if text.startswith("[", position) and "]" not in text[position:]:
                return position, "unclosed tag: '[' without ']'"
            if text.startswith(f"[{expected}:", position):
                return position, f"[{expected}:…] is malformed (a tag value holds no '[' or ']')"
            return (
                position,
                f"[{expected}:…] tag missing here (an entry is [type:…] [src:…] [when:…] [rec:…] content)",
            )
        name, column = tags[index]
        if name == expected:
            continue
        if name in names[:index]:
            return column, f"[{name}:…] appears twice"
        if expected not in names:
            return column, f"[{expected}:…] tag missing here (order: type, src, when, rec)"
        if name in TAGS:
            return (
                column,
                f"[{name}:…] is out of order: [{expected}:…] comes here (order: type, src, when, rec)",
            )
        return column, f"unknown tag [{name}:…]: [{expected}:…] comes here (order: type, src, when, rec)"
    return tags[-1][1], "tags are separated by a space: [type:…] [src:…] [when:…] [rec:…]"


def _read(path: str, stdin: IO[str] | None) -> Iterator[str]:
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            yield from stream
            return
        wrapper = io.TextIOWrapper(buffer, encoding="utf-8-sig")
        try:
            yield from wrapper
        finally:
            wrapper.detach()
        return
    with open(path, encoding="utf-8-sig") as stream:
        yield from stream


def validate_amr_lite(paths: Iterable[str | PathLike[str]], *, stdin: IO[str] | None = None) -> ProfileReport:
    """Check AMR-lite memory files (``-`` reads stdin); the report carries the parsed entries."""
    checker = _Checker()
    report = checker.report
    for path in paths:
        name = STDIN_NAME if str(path) == "-" else str(path)
        summary: dict[str, Any] = {
            "source": name,
            "readable": True,
            "lines": 0,
            "entry_lines": 0,
            "template_lines": 0,
        }
        report.sources.append(summary)
        before = len(checker.entries)
        try:
            summary["lines"], summary["entry_lines"], summary["template_lines"] = checker.check_lines(
                name, _read(str(path), stdin)
            )
        except OSError as exc:
            summary["readable"] = False
            report.input_errors.append(InputError(name, None, f"cannot read: {exc.strerror or exc}"))
        except UnicodeDecodeError as exc:
            summary["readable"] = False
            report.input_errors.append(InputError(name, None, f"not UTF-8 text ({exc.reason})"))
        summary["entries"] = len(checker.entries) - before
    checker.link_markers()
    entries = checker.entries
    report.extras["entries"] = lambda: [entry.as_dict() for entry in entries]
    return report
