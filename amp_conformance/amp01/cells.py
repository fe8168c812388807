"""The shared memory-cell checker: one function both the offline validator and the online checks call.

``validate_cell`` returns every problem as data (``Problem``) instead of raising, so the online suite
can cite each one and the validator can print each one. Schema validation uses jsonschema against
the bundled contract (compiled once, on first use); the id is parsed with python-ulid; timestamps
must be RFC 3339 in UTC (AMP-CELL-01, -05, -10…-14, -18, -20; C-03, C-23). Importing this module has
no side effects, so the online suite pays nothing until it checks its first cell.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any, Final, Literal

from jsonschema import FormatChecker, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from ulid import ULID

from amp_conformance.amp01.decay import SECONDS_PER_DAY, decay_score
from amp_conformance.engine.resources import load_contract

CELL_SCHEMA: Final = "memory-cell.schema.json"
ID_PREFIX: Final = "mem_"
TIMESTAMP_FIELDS: Final = ("created_at", "last_accessed_at", "last_updated_at", "expires_at")
IdForm = Literal["prefixed", "bare"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DATE_TIME = FormatChecker(["date-time"])
_SCORE_FIELDS: Final = ("importance", "confidence", "decay_rate", "access_count")


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a cell is invalid: where (JSON path), what (message) and why (short kebab code)."""

    path: str
    message: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class CellIdError(ValueError):
    """An id that is not a ULID, bare or behind ``mem_``; the message says which form was seen."""


class TimestampError(ValueError):
    """A timestamp that is not RFC 3339 (``code`` ``timestamp-format``) or not UTC (``timestamp-not-utc``)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def json_path(parts: Iterable[str | int]) -> str:
    """``["scoring", "importance"]`` → ``$.scoring.importance``; odd keys are bracket-quoted."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append("['" + part.replace("\\", "\\\\").replace("'", "\\'") + "']")
    return "".join(out)


def parse_cell_id(value: str) -> tuple[ULID, IdForm]:
    """Parse a cell id, bare ULID or ``mem_`` + ULID (C-03), with python-ulid.

    python-ulid decodes lower case silently, but AMP ids are upper-case Crockford base32, so lower
    case is refused here with a message naming the form.
    """
    form: IdForm = "prefixed" if value.startswith(ID_PREFIX) else "bare"
    text = value[len(ID_PREFIX) :] if form == "prefixed" else value
    label = f"{form} id {value!r}"
    if form == "bare" and "_" in text:
        prefix = text[: text.index("_") + 1]
        raise CellIdError(f"{label}: unknown prefix {prefix!r}, only {ID_PREFIX!r} or none is allowed")
    if text != text.upper():
        raise CellIdError(f"{label}: a ULID is upper-case Crockford base32, this one has lower-case letters")
    if len(text) != 26:
        raise CellIdError(f"{label}: a ULID has 26 characters, this one has {len(text)}")
    if text[0] not in "01234567":
        raise CellIdError(f"{label}: a ULID starts with 0-7 (128 bits), this one starts with {text[0]!r}")
    try:
        return ULID.from_str(text), form
    except ValueError as exc:
        raise CellIdError(f"{label}: not a ULID ({exc})") from None


def parse_utc_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 date-time whose offset is UTC (``Z`` or ``+00:00``), AMP-CELL-18.

    The shape is checked by jsonschema's RFC 3339 format checker (Python's ``fromisoformat`` also
    takes non-RFC forms such as a bare date); fractional digits beyond microseconds are truncated.
    """
    if not _DATE_TIME.conforms(value, "date-time"):
        raise TimestampError(f"{value!r} is not an RFC 3339 date-time with an offset", "timestamp-format")
    return _parse_rfc3339_utc(value)


def _parse_rfc3339_utc(value: str) -> datetime:
    """``parse_utc_timestamp`` minus the shape check, for values a schema check has just accepted."""
    try:
        parsed = datetime.fromisoformat(value.upper())
    except ValueError as exc:
        raise TimestampError(f"{value!r} cannot be represented ({exc})", "timestamp-format") from None
    if not (value[-1] in "Zz" or value.endswith("+00:00")):
        raise TimestampError(
            f"{value!r} is not UTC (offset {value[-6:]}; expected Z or +00:00)", "timestamp-not-utc"
        )
    return parsed


def cell_decay_score(cell: Mapping[str, Any], now: datetime) -> float:
    """The cell's decay score at ``now`` (requirements.md §3), from its scoring and lifecycle.

    Δt runs from ``last_accessed_at``, else ``created_at``. A clock that lags the cell (Δt < 0) counts
    as Δt = 0, so client/server skew never inflates a score above importance × confidence.
    Raises ``ValueError`` naming the field when the cell does not allow the computation.
    """
    scoring = cell.get("scoring")
    lifecycle = cell.get("lifecycle")
    if not isinstance(scoring, Mapping):
        raise ValueError("scoring is missing or not an object")
    if not isinstance(lifecycle, Mapping):
        raise ValueError("lifecycle is missing or not an object")
    numbers = _scoring_numbers(scoring)
    anchor_name = "last_accessed_at" if lifecycle.get("last_accessed_at") is not None else "created_at"
    anchor = lifecycle.get(anchor_name)
    if not isinstance(anchor, str):
        raise ValueError(f"lifecycle.{anchor_name} is missing or not a string")
    try:
        since = parse_utc_timestamp(anchor)
    except TimestampError as exc:
        raise ValueError(f"lifecycle.{anchor_name}: {exc}") from None
    return _score_since(numbers, since, now)


def _scoring_numbers(scoring: Mapping[str, Any]) -> list[float]:
    numbers = []
    for name in ("importance", "confidence", "decay_rate"):
        value = scoring.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"scoring.{name} is missing or not a number")
        numbers.append(float(value))
    return numbers


def _score_since(numbers: list[float], since: datetime, now: datetime) -> float:
    importance, confidence, rate = numbers
    delta_days = max((now - since) / timedelta(seconds=1), 0.0) / SECONDS_PER_DAY
    return decay_score(importance, confidence, rate, delta_days)


ACCELERATION_ENV: Final = "AMP_CONFORMANCE_NO_ACCELERATION"


@cache
def _accelerator() -> Callable[[object], bool] | None:
    """A fast yes/no schema check (jsonschema-rs, installed with schemathesis), or None.

    jsonschema spends about 0.3 ms per cell, too slow for 100,000-cell exports. A cell the fast
    check accepts skips jsonschema; any other cell goes through jsonschema, which alone words the
    problems. The id and timestamp checks below run on every cell either way, so a format the two
    engines judge differently (e.g. a leap second) is still caught. Set ``AMP_CONFORMANCE_NO_ACCELERATION``
    to use jsonschema only.
    """
    if os.environ.get(ACCELERATION_ENV):
        return None
    try:
        import jsonschema_rs
    except ImportError:
        return None
    fast = jsonschema_rs.validator_for(load_contract(CELL_SCHEMA, "amp01"), validate_formats=True)
    return fast.is_valid


def _fast_accepts(cell: object) -> bool:
    """True only when the fast check runs and accepts; any trouble in it defers to jsonschema."""
    fast = _accelerator()
    if fast is None:
        return False
    try:
        return fast(cell)
    except Exception:
        return False


@cache
def cell_validator() -> Validator:
    """The compiled jsonschema validator of the bundled cell schema, with format checking (cached)."""
    schema = load_contract(CELL_SCHEMA, "amp01")
    cls = validator_for(schema)
    cls.check_schema(schema)
    validator: Validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return validator


def validate_cell(cell: object, *, now: datetime | None = None) -> list[Problem]:
    """Every problem of one cell, in the order found; an empty list means the cell is valid.

    ``now`` is the moment the decay score is derived for; by default the newest of the cell's own
    ``created_at``/``last_accessed_at``/``last_updated_at``, so the result never depends on the clock.
    """
    accepted = _fast_accepts(cell)
    problems = [] if accepted else list(_schema_problems(cell))
    if not isinstance(cell, dict):
        return problems
    cell_id = cell.get("id")
    if isinstance(cell_id, str):
        try:
            parse_cell_id(cell_id)
        except CellIdError as exc:
            problems.append(Problem("$.id", str(exc), "id-not-ulid"))
    lifecycle = cell.get("lifecycle")
    times = _timestamp_problems(lifecycle, problems, accepted) if isinstance(lifecycle, dict) else {}
    scoring = cell.get("scoring")
    if isinstance(scoring, dict):
        _non_finite_scores(scoring, problems)
    _decay_problem(cell, times, now, problems)
    return problems


_FIELD_CODES: Final[dict[tuple[str, str], str]] = {
    ("$.lifecycle.status", "enum"): "status-value",
    ("$.type", "enum"): "type-value",
    ("$.identity.owner_type", "enum"): "owner-type-value",
    ("$.amp_version", "const"): "amp-version",
}
_KEYWORD_CODES: Final = {
    "required": "missing-member",
    "additionalProperties": "unknown-member",
    "type": "wrong-type",
    "enum": "enum-value",
    "const": "const-value",
    "minLength": "empty-string",
    "format": "bad-format",
}


def _schema_problems(cell: object) -> Iterator[Problem]:
    """One Problem per jsonschema error, the message prefixed with the offending field's name."""
    instance: Any = cell
    for raw in cell_validator().iter_errors(instance):
        error = _specific(raw)
        parts = list(error.absolute_path)
        keyword = str(error.validator)
        message = error.message
        if keyword == "required":
            parts.append(_missing_member(error))
            message = "required member is missing"
        elif keyword == "additionalProperties":
            for extra in _extra_members(error):
                yield Problem(
                    json_path([*parts, extra]), f"{extra}: unknown member, not allowed here", "unknown-member"
                )
            continue
        path = json_path(parts)
        if path == "$.id" and isinstance(error.instance, str):
            continue  # parse_cell_id explains a bad id better than a regex does
        yield Problem(path, f"{_field_name(parts)}: {message}", _schema_code(path, keyword, parts))


def _field_name(parts: list[str | int]) -> str:
    """The member a message is about, with trailing indices: ``readable_by[1]``; ``cell`` at the root."""
    tail: list[str | int] = []
    for part in reversed(parts):
        tail.insert(0, part)
        if isinstance(part, str):
            break
    relative = json_path(tail)[1:]
    if relative.startswith("."):
        return relative[1:]
    return relative if tail and isinstance(tail[0], str) else "cell" + relative


def _specific(error: ValidationError) -> ValidationError:
    """For ``anyOf``/``oneOf`` (nullable fields), the one branch error that is not a mere type clash."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        informative = [sub for sub in error.context if sub.validator != "type"]
        if len(informative) == 1:
            return informative[0]
    return error


def _schema_code(path: str, keyword: str, parts: list[str | int]) -> str:
    if (path, keyword) in _FIELD_CODES:
        return _FIELD_CODES[(path, keyword)]
    in_scoring = len(parts) == 2 and parts[0] == "scoring" and parts[1] in _SCORE_FIELDS
    if in_scoring and keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return "score-range"
    if keyword == "format" and len(parts) == 2 and parts[0] == "lifecycle":
        return "timestamp-format"
    return _KEYWORD_CODES.get(keyword, "schema")


def _missing_member(error: ValidationError) -> str:
    """The member a ``required`` error is about (jsonschema reports one error per missing name)."""
    instance = error.instance if isinstance(error.instance, dict) else {}
    names = error.validator_value if isinstance(error.validator_value, list) else []
    missing = [name for name in names if name not in instance]
    for name in missing:
        if error.message.startswith(repr(name)):
            return str(name)
    return str(missing[0]) if missing else "?"


def _extra_members(error: ValidationError) -> list[str]:
    declared = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    instance = error.instance if isinstance(error.instance, dict) else {}
    return [str(name) for name in instance if name not in declared]


def _timestamp_problems(
    lifecycle: dict[str, Any], problems: list[Problem], shape_checked: bool
) -> dict[str, datetime]:
    """UTC check of each timestamp (shape errors are already schema problems), then their order.

    ``shape_checked``: the fast schema check accepted the cell, so its RFC 3339 check need not be
    repeated; ``datetime.fromisoformat`` still refuses what Python cannot represent (leap seconds).
    """
    parse = _parse_rfc3339_utc if shape_checked else parse_utc_timestamp
    times: dict[str, datetime] = {}
    for name in TIMESTAMP_FIELDS:
        value = lifecycle.get(name)
        if not isinstance(value, str):
            continue
        try:
            times[name] = parse(value)
        except TimestampError as exc:
            path = f"$.lifecycle.{name}"
            if not any(p.path == path for p in problems):  # else the schema has reported it
                problems.append(Problem(path, f"{name}: {exc}", exc.code))
    created = times.get("created_at")
    if created is not None:
        for name in ("last_updated_at", "last_accessed_at"):
            later = times.get(name)
            if later is not None and later < created:
                message = f"{name}: {lifecycle[name]} is before created_at {lifecycle['created_at']}"
                problems.append(Problem(f"$.lifecycle.{name}", message, "timestamp-order"))
    return times


def _non_finite_scores(scoring: dict[str, Any], problems: list[Problem]) -> None:
    """NaN passes every jsonschema bound (comparisons are false), so catch it explicitly."""
    for name in _SCORE_FIELDS:
        value = scoring.get(name)
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(
                Problem(f"$.scoring.{name}", f"{name}: {value!r} is not a finite number", "score-range")
            )


def _decay_problem(
    cell: dict[str, Any], times: dict[str, datetime], now: datetime | None, problems: list[Problem]
) -> None:
    """Derive the decay score unless an input is already reported (one reason, one problem)."""
    if any(p.path.startswith(("$.scoring", "$.lifecycle")) or p.path == "$" for p in problems):
        return
    if now is None:
        stamps = [times[n] for n in ("created_at", "last_accessed_at", "last_updated_at") if n in times]
        if not stamps:
            return
        now = max(stamps)
    since = times.get("last_accessed_at") or times.get("created_at")  # already parsed: reuse
    scoring = cell.get("scoring")
    try:
        if since is None or not isinstance(scoring, Mapping):
            score = cell_decay_score(cell, now)
        else:
            score = _score_since(_scoring_numbers(scoring), since, now)
    except ValueError as exc:
        problems.append(Problem("$.scoring", f"decay score cannot be derived: {exc}", "decay-score"))
        return
    if not 0.0 <= score <= 1.0:
        problems.append(Problem("$.scoring", f"decay score {score!r} is outside [0, 1]", "decay-score"))
