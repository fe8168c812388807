"""Request models (pydantic v2, strict types, unknown members ignored).

Strict mode is deliberate: a JSON string is not a number and ``1`` is not ``true``, so whatever the
contract calls invalid is refused here with 422 rather than coerced and stored. Members a client may
send but must not set (``id``, ``amp_version``, a create-time ``lifecycle``, ``access_count``,
``identity``/``type``/``created_at`` on PATCH) are absent from the models, so they are ignored like
any other unknown member and never stored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from reference_server.amp01.config import MAX_PAGE_SIZE
from reference_server.amp01.errors import AMPError, validation_error
from reference_server.amp01.timestamps import format_timestamp, parse_rfc3339

MemoryType = Literal["episodic", "semantic", "procedural"]
OwnerType = Literal["user", "agent", "organization"]
LifecycleStatus = Literal["active", "stale", "archived", "deleted"]
SourceType = Literal["conversation", "document", "inference", "user_explicit"]
ExtractionMethod = Literal["llm_extraction", "rule_based", "user_explicit"]

MAX_OFFSET = 2**53 - 1
"""Largest offset accepted (the largest integer every JSON client can represent exactly)."""

MEMORY_TYPES: tuple[str, ...] = ("episodic", "semantic", "procedural")
STATUSES: tuple[str, ...] = ("active", "stale", "archived", "deleted")


def _normalise_datetime(value: str) -> str:
    try:
        return format_timestamp(parse_rfc3339(value))
    except ValueError as exc:
        raise ValueError(f"Input should be an RFC 3339 date-time: {exc}") from None


DateTimeText = Annotated[str, AfterValidator(_normalise_datetime)]
UnitFloat = Annotated[float, Field(ge=0.0, le=1.0)]
Rate = Annotated[float, Field(ge=0.0)]

_QUERY_INT = re.compile(r"([+-]?[0-9]{1,30})(?:\.0*)?", re.ASCII)


def _query_int(value: Any) -> Any:
    """Query strings carry text; accept decimal integers ('5', and '5.0', which JSON Schema counts as
    the integer 5), nothing looser ('5_0', '0x5', ' 5', '5.5')."""
    if isinstance(value, str):
        match = _QUERY_INT.fullmatch(value)
        if match:
            return int(match.group(1))
    return value


def _integral(value: Any) -> Any:
    """JSON Schema's ``integer`` includes numbers with a zero fraction (``10.0``); so do we."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)


class ContentIn(_Model):
    text: Annotated[str, Field(min_length=1)]
    metadata: dict[str, Any] = Field(default_factory=dict)


class ContentUpdateIn(_Model):
    """PATCH content: "text and/or metadata" (API reference); what is not sent keeps its value."""

    text: Annotated[str, Field(min_length=1)] | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("text", "metadata", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("may be left out, but not null")
        return value


class IdentityIn(_Model):
    owner_id: str
    owner_type: OwnerType
    created_by: str | None = None
    session_id: str | None = None


class ScoringIn(_Model):
    """Create and PATCH both use this; on PATCH only ``model_fields_set`` is applied."""

    importance: UnitFloat = 0.5
    confidence: UnitFloat = 1.0
    decay_rate: Rate = 0.01


class AccessPolicyIn(_Model):
    readable_by: list[str] = Field(default_factory=list)
    writable_by: list[str] = Field(default_factory=list)
    public: bool = False


class ProvenanceIn(_Model):
    source_type: SourceType | None = None
    source_ref: str | None = None
    extraction_method: ExtractionMethod | None = None


class CreateRequest(_Model):
    type: MemoryType
    content: ContentIn
    identity: IdentityIn
    scoring: ScoringIn | None = None
    access_policy: AccessPolicyIn | None = None
    provenance: ProvenanceIn | None = None


class LifecycleUpdate(_Model):
    """Only ``status`` and ``expires_at`` are writable; ``created_at`` and the access/update stamps
    belong to the server and are ignored like any unknown member."""

    status: LifecycleStatus = "active"
    """Applied only when sent (see ``model_fields_set``); ``null`` is refused."""
    expires_at: DateTimeText | None = None


class UpdateRequest(_Model):
    content: ContentUpdateIn | None = None
    scoring: ScoringIn | None = None
    access_policy: AccessPolicyIn | None = None
    provenance: ProvenanceIn | None = None
    lifecycle: LifecycleUpdate | None = None


JsonInt = Annotated[int, BeforeValidator(_integral)]


class SearchRequest(_Model):
    query: str
    owner_id: str
    types: list[MemoryType] | None = None
    status: list[LifecycleStatus] | None = None
    limit: Annotated[JsonInt, Field(ge=1, le=MAX_PAGE_SIZE)] = 10
    offset: Annotated[JsonInt, Field(ge=0, le=MAX_OFFSET)] = 0
    include_stale: bool = False


QueryInt = Annotated[int, BeforeValidator(_query_int)]


class ListQuery(_Model):
    owner_id: str | None = None
    type: MemoryType | None = None
    status: LifecycleStatus | None = None
    limit: Annotated[QueryInt, Field(ge=1, le=MAX_PAGE_SIZE)] = 20
    offset: Annotated[QueryInt, Field(ge=0, le=MAX_OFFSET)] = 0


M = TypeVar("M", bound=BaseModel)


def _entries(exc: ValidationError, prefix: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for error in exc.errors(include_url=False, include_context=False):
        entries.append(
            {
                "type": error["type"],
                "loc": [prefix, *error["loc"]],
                "msg": error["msg"],
                "input": _jsonable(error.get("input")),
            }
        )
    return entries


def _jsonable(value: Any) -> Any:
    """Inputs come from JSON or query strings, so they already are JSON; guard the odd case anyway."""
    if value is None or isinstance(value, (str, int, float, bool)):
        if isinstance(value, float) and value != value:  # NaN cannot be written
            return None
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def validate(model: type[M], data: Any, *, location: str, lax: bool = False) -> M:
    """Validate ``data`` against ``model``; a failure is a 422 ``AMPError`` with ``details.errors``.

    ``lax`` (the values-coerced fault only) lets pydantic coerce: ``"0.5"`` to 0.5, ``"true"`` to true."""
    try:
        return model.model_validate(data, strict=False if lax else None)
    except ValidationError as exc:
        raise _as_amp_error(exc, location) from None


def _as_amp_error(exc: ValidationError, location: str) -> AMPError:
    return validation_error(_entries(exc, location))
