"""Known gaps, baselined: ``--expectations FILE`` (TOML, ``contract/expectations.schema.json``).

A gate that goes red on day one teaches people to ignore it. An expectations file lists the checks a
server is known to fail (by check id or by requirement id), why, and where that is tracked; the run
then fails only on something new. A check that passes while it was expected to fail is an
*unexpected pass* (the file is out of date: a warning, or a failure with ``--strict-expectations``),
and an entry that matches no check is *stale*. The functions here are pure: loading, matching,
judging, and writing a baseline from a report's failures. The plugin maps them onto pytest's xfail.

File format::

    # amp-conformance expectations
    [[expect]]
    check = "test_read.py::test_each_read_adds_one_to_access_count"   # or: requirement = "AMP-READ-02"
    outcome = "fail"                                                  # fail | warn | error | skip
    reason = "access_count is not tracked yet"
    link = "https://example.com/issues/12"                            # optional
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from amp_conformance.engine.resources import load_contract
from amp_conformance.engine.vocabulary import Outcome

#: Outcomes a baseline records: what makes a run fail or end incomplete (a blocked check never does:
#: its root cause is the failure that counts).
BASELINE_OUTCOMES = (Outcome.FAIL, Outcome.ERROR)
_HEADER = re.compile(r"^\s*\[\[\s*expect\s*\]\]")
#: Run-specific text in a finding (the server's address, the run's namespace, ids the server made)
#: that would make every re-baseline a noisy diff: each is replaced by a stable placeholder.
_RUN_SPECIFIC = (
    (re.compile(r"\bhttps?://[^\s/'\"]+"), "<server>"),
    (re.compile(r"\bamp-ct-[0-9a-z]{26}(?:-gw\d+)?"), "<run>"),
    (re.compile(r"(?<![0-9A-Za-z])[0-9A-HJKMNP-TV-Z]{26}(?![0-9A-Za-z])"), "<ulid>"),
)
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class Judged(Protocol):
    """What the functions below need of a check's result (``engine.verdict.CheckResult`` has it)."""

    @property
    def nodeid(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def expectation(self) -> Mapping[str, Any] | None: ...


class ExpectationsError(ValueError):
    """An expectations file that cannot be used; the message names the file and the line."""


@dataclass(frozen=True)
class Expectation:
    """One entry: which checks it covers, the outcome they are expected to have, and why."""

    outcome: str
    reason: str
    check: str | None = None
    requirement: str | None = None
    link: str | None = None
    line: int | None = None

    @property
    def target(self) -> str:
        return f"check {self.check}" if self.check else f"requirement {self.requirement}"

    def covers(self, nodeid: str, name: str, requirements: Sequence[str]) -> bool:
        """Whether this entry is about that check. A check id matches the full node id, its tail
        after a folder (``test_read.py::test_x`` matches ``.../checks/test_read.py::test_x``), or the
        bare test name; a requirement id matches every check citing it."""
        if self.check is not None:
            check = self.check
            return nodeid == check or nodeid.endswith("/" + check) or name == check
        return self.requirement in requirements

    def judge(self, actual: str, finding_requirements: Sequence[str]) -> dict[str, Any] | None:
        """The check's ``expectation`` field, or None when this entry says nothing about how it
        ended. A requirement entry is about the requirement: it judges a check whose finding names
        it (or one with no finding of its own, a skip or an error), not a pass or a finding about
        another requirement; whether the requirement now passes is :func:`requirements_met`'s."""
        if self.check is None and (
            actual == Outcome.PASS or (finding_requirements and self.requirement not in finding_requirements)
        ):
            return None
        return self.as_report(actual)

    def as_report(self, actual: str) -> dict[str, Any]:
        """The check's ``expectation`` field in the JSON report."""
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "link": self.link,
            "met": actual == self.outcome,
        }


class Cited(Judged, Protocol):
    """A result with the requirements it cites and those its finding names."""

    @property
    def name(self) -> str: ...
    @property
    def requirements(self) -> Sequence[str]: ...
    @property
    def finding_requirements(self) -> Sequence[str]: ...


def requirements_met(expectations: Expectations, results: Iterable[Cited]) -> dict[str, Expectation]:
    """The unexpected passes of requirement entries, by node id of the checks citing it: a
    requirement no check's finding names any more, whose citing checks passed (a skip aside) and
    which no entry of their own covers."""
    results = list(results)
    found: dict[str, Expectation] = {}
    for entry in expectations.entries:
        if entry.check is not None or entry.outcome == Outcome.SKIP:
            continue
        rid = str(entry.requirement)
        citing = [r for r in results if rid in r.requirements]
        named = any(rid in r.finding_requirements and r.outcome != Outcome.PASS for r in results)
        if named or not citing or not all(r.outcome in (Outcome.PASS, Outcome.SKIP) for r in citing):
            continue
        for result in citing:
            own = expectations.match(result.nodeid, result.name, result.requirements)
            if result.outcome == Outcome.PASS and result.expectation is None and own is entry:
                found.setdefault(result.nodeid, entry)
    return found


def unexpected_pass(expected: Expectation, actual: str) -> bool:
    """A check expected to fail, warn or error that passed."""
    return actual == Outcome.PASS and expected.outcome != Outcome.SKIP


@dataclass
class Expectations:
    """A loaded file; :meth:`match` remembers which entries matched, for :meth:`stale`."""

    path: Path
    entries: list[Expectation]
    _used: set[int] = field(default_factory=set)

    def match(self, nodeid: str, name: str, requirements: Sequence[str]) -> Expectation | None:
        """The entry for a check: an entry naming the check wins over one naming a requirement; among
        equals, the first in the file."""
        found: Expectation | None = None
        for index, entry in enumerate(self.entries):
            if entry.covers(nodeid, name, requirements):
                self._used.add(index)
                if found is None or (entry.check is not None and found.check is None):
                    found = entry
        return found

    def stale(self) -> list[dict[str, Any]]:
        """Entries that matched no check (a renamed or removed check, a typo, an unknown id)."""
        return [
            {"target": entry.target, "outcome": entry.outcome, "reason": entry.reason, "line": entry.line}
            for index, entry in enumerate(self.entries)
            if index not in self._used
        ]

    def report_entry(self) -> dict[str, Any]:
        """The report's top-level ``expectations`` field."""
        return {"file": str(self.path), "stale": self.stale()}


def _entry_lines(text: str) -> list[int]:
    return [number for number, line in enumerate(text.splitlines(), 1) if _HEADER.match(line)]


def parse_expectations(text: str, path: Path) -> Expectations:
    """Parse and schema-check an expectations document; ExpectationsError names the line."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationsError(f"{path}: not valid TOML: {exc}") from None
    lines = _entry_lines(text)
    import jsonschema  # only when a file is read: every pytest process imports this module

    validator = jsonschema.Draft202012Validator(load_contract("expectations.schema.json"))
    errors = sorted(validator.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        error = errors[0]
        where = list(error.absolute_path)
        line = ""
        if len(where) >= 2 and where[0] == "expect" and isinstance(where[1], int) and where[1] < len(lines):
            line = f" (entry at line {lines[where[1]]})"
        location = "/".join(map(str, where)) or "the document"
        raise ExpectationsError(f"{path}{line}: {location}: {error.message}")
    entries = [
        Expectation(
            outcome=item["outcome"],
            reason=item["reason"],
            check=item.get("check"),
            requirement=item.get("requirement"),
            link=item.get("link"),
            line=lines[index] if index < len(lines) else None,
        )
        for index, item in enumerate(document.get("expect", []))
    ]
    return Expectations(path, entries)


def load_expectations(path: Path) -> Expectations:
    """Read ``path``; ExpectationsError (one line) when it cannot be read or is malformed."""
    if not path.exists():
        raise ExpectationsError(
            f"--expectations {path}: no such file; create it on a first run with "
            f"--write-expectations {path} (it lists that run's failures as known gaps)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExpectationsError(
            f"cannot read --expectations {path}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    return parse_expectations(text, path)


# writing a baseline ---------------------------------------------------------------------------


def toml_string(text: str) -> str:
    """A TOML basic string of ``text`` (control characters and quotes escaped)."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    out = []
    for char in text:
        if char in _TOML_ESCAPES:
            out.append(_TOML_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def baseline_text(checks: Iterable[Mapping[str, Any]], *, source: str = "") -> str:
    """An expectations document listing every failing or erroring check of a report's ``checks`` by
    its id, the finding as the reason. Two baselines of the same findings are the same text: no date,
    run id, server address or server-made id is written (:func:`stable_reason`)."""
    lines = [
        "# amp-conformance expectations: known gaps of the server under test.",
        f"# Baseline written{' from ' + source if source else ''} by --write-expectations. Give each entry",
        "# a real reason and a link to where it is tracked; delete it when the check passes.",
        "",
    ]
    for check in baseline_checks(checks):
        outcome, check_id = check["outcome"], check["id"]
        ids = ", ".join(r for r in check.get("requirements") or [] if isinstance(r, str))
        message = str(check.get("message") or "").strip().splitlines()
        reason = stable_reason(f"{ids}: {message[0] if message else outcome}")[:300]
        lines += ["[[expect]]", f"check = {toml_string(check_id)}", f'outcome = "{outcome}"']
        lines += [f"reason = {toml_string(reason)}", ""]
    return "\n".join(lines)


def baseline_checks(checks: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The checks of a report's ``checks`` a baseline lists: one entry each."""
    return [c for c in checks if c.get("outcome") in BASELINE_OUTCOMES and isinstance(c.get("id"), str)]


def stable_reason(text: str) -> str:
    """``text`` with what differs from run to run (address and port, namespace, ULIDs) replaced."""
    for pattern, placeholder in _RUN_SPECIFIC:
        text = pattern.sub(placeholder, text)
    return text


def write_baseline(checks: Iterable[Mapping[str, Any]], path: Path, *, source: str = "") -> str | None:
    """Write :func:`baseline_text` to ``path``; a one-line reason when it cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(baseline_text(checks, source=source), encoding="utf-8")
    except OSError as exc:
        return f"cannot write --write-expectations {path}: {exc.strerror or exc}"
    return None


# the pytest side ------------------------------------------------------------------------------


def xfail_marker(expectation: Expectation, *, strict: bool) -> pytest.MarkDecorator | None:
    """pytest's own ``xfail`` for a check expected to fail or error, so pytest and JUnit show it as
    xfailed (and a pass as XPASS, a failure under ``strict``). A check expected to warn or skip gets
    none: neither fails a pytest run."""
    if expectation.outcome not in (Outcome.FAIL, Outcome.ERROR):
        return None
    reason = f"expected {expectation.outcome}: {expectation.reason}"
    if expectation.link:
        reason += f" ({expectation.link})"
    raises = AssertionError if expectation.outcome == Outcome.FAIL else None  # a CheckFailure is one
    return pytest.mark.xfail(strict=strict, reason=reason, raises=raises)


def unexpected_passes(results: Iterable[Judged]) -> list[Judged]:
    return [
        r
        for r in results
        if r.expectation is not None and not r.expectation.get("met") and r.outcome == Outcome.PASS
    ]


def render_expectations(results: Iterable[Judged], applied: Mapping[str, Any], *, strict: bool) -> str:
    """The terminal's expectations section: expected outcomes met, unexpected passes, unmet
    expectations, stale entries."""
    results = list(results)
    expected = [r for r in results if r.expectation is not None]
    met = [r for r in expected if r.expectation and r.expectation.get("met")]
    surprises = unexpected_passes(results)
    unmet = [r for r in expected if r not in met and r not in surprises]
    lines = [
        "",
        f"expectations ({applied.get('file')}): {len(met)} of {len(expected)} matched checks as expected",
    ]
    if surprises:
        effect = (
            "each fails the run under --strict-expectations"
            if strict
            else "a warning; --strict-expectations fails the run on them"
        )
        lines.append(f"unexpected passes ({effect}): delete or update their entries")
        for result in surprises:
            assert result.expectation is not None
            lines.append(
                f"  UNEXPECTED PASS {result.nodeid} (expected {result.expectation['outcome']}: "
                f"{result.expectation['reason']})"
            )
    for result in unmet:
        assert result.expectation is not None
        lines.append(
            f"  NOT AS EXPECTED {result.nodeid}: {result.outcome}, expected {result.expectation['outcome']}"
        )
    stale = applied.get("stale") or []
    if stale:
        lines.append(f"stale entries (they match no check): {len(stale)}")
        lines += [f"  line {entry.get('line') or '?'}: {entry.get('target')}" for entry in stale]
    return "\n".join(lines)
