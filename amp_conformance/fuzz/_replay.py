"""Requests of our own after the engine: unusual-input probes and the minimisation of 5xx reproductions.

Hypothesis finds unusual values by luck, and with a small budget mostly generates simple ones. The
probes make the classic fuzzing dictionary deterministic: starting from the richest request each
operation answered without a 5xx (with the absent optional free-form objects and plain strings its
schema declares filled in), they replace one value at a time with non-ASCII or invalid Unicode text or a
huge number, and add a member holding a huge number, non-ASCII text or deep nesting to every object
(free-form ones such as ``content.metadata`` included; AMP ignores unknown members elsewhere). Every
answer is judged like the engine's: no 5xx, 4xx in the error envelope, status declared.

The schemathesis engine reports a failure at its first occurrence without shrinking it, so the 5xx
reproductions are minimised here: drop generated headers, query parameters, body members and elements,
then halve the strings, keeping each change that still gets the same status.

Requests go through the same schemathesis transport as the engine's (network or in-process).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from amp_conformance.fuzz._checks import (
    EnvelopeFailure,
    check_error_envelope,
    convention_status,
    operation_label,
    outside_api,
)
from amp_conformance.fuzz._collect import Collector

_UNUSUAL_STRINGS: Final = ("é", "日本語のテキスト", "\U0001f600", "\ud800", "\x00", "\u202eevil")
_UNUSUAL_NUMBERS: Final = (2**53 + 1, -(2**63) - 1, 10**30)
_PROBE_MEMBER: Final = "amp_fuzz"
_MAX_PROBES_PER_OPERATION: Final = 300


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"n": value}
    return value


_UNUSUAL_MEMBERS: Final = (("deep nesting (6 levels)", _nested(6)), ("deep nesting (40 levels)", _nested(40)))


def _walk(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index))


def _set(value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _set(value[head], rest, new)}
    copied = list(value)
    copied[int(head)] = _set(copied[int(head)], rest, new)
    return copied


def _pointer(path: tuple[str | int, ...]) -> str:
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            parts.append(f".{part}")
        else:
            parts.append(f"[{json.dumps(part)}]")
    return "body" + "".join(parts)


def _value_variants(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, bool):
        return
    if value is None:  # often a nullable string left empty: give it text
        for text in _UNUSUAL_STRINGS[:3]:
            yield f"string {text!r}", text
    elif isinstance(value, str):
        for text in _UNUSUAL_STRINGS:
            yield f"string {text!r}", text
    elif isinstance(value, int | float):
        for number in _UNUSUAL_NUMBERS:
            yield f"number {number}", number


def _body_mutations(body: Any) -> Iterator[tuple[str, Any]]:
    for path, value in _walk(body):
        for label, variant in _value_variants(value):
            yield f"{_pointer(path)} = {label}", _set(body, path, variant)
        if isinstance(value, dict):
            members: list[tuple[str, Any]] = [(f"number {n}", n) for n in _UNUSUAL_NUMBERS[:2]]
            members += [(f"string {t!r}", t) for t in _UNUSUAL_STRINGS[:2]]
            members += list(_UNUSUAL_MEMBERS)
            for label, member in members:
                where = f"{_pointer(path)}.{_PROBE_MEMBER}"
                yield f"{where} = {label}", _set(body, path, {**value, _PROBE_MEMBER: member})


def _probes(case: Any) -> Iterator[tuple[str, Any]]:
    """(description, derived case) for one operation's base request."""
    for name, value in case.query.items():
        for label, variant in _value_variants(value if value is not None else ""):
            yield f"query {name} = {label}", derived(case, query={**case.query, name: variant})
    for name in case.path_parameters:
        for text in _UNUSUAL_STRINGS[:4]:
            probe = derived(case)
            probe.path_parameters[name] = text
            yield f"path {name} = string {text!r}", probe
    if isinstance(case.body, dict | list):
        for label, body in _body_mutations(case.body):
            yield label, derived(case, body=body)


def _declared(status: int, codes: Iterable[str]) -> bool:
    declared = {str(code).upper() for code in codes}
    return "DEFAULT" in declared or str(status) in declared or f"{status // 100}XX" in declared


def _judge_probe(
    collector: Collector, case: Any, response: Any, description: str, headers: Mapping[str, str]
) -> None:
    status = int(response.status_code)
    curl = str(case.as_curl_command(headers=dict(headers)))
    operation = operation_label(response, case)
    if status >= 500:
        if not collector.profile.allowed_server_error(response):
            collector.add(
                check="not_a_server_error",
                operation=operation,
                status=status,
                message=f"{status} on unusual input ({description})",
                curl=curl,
                case=case,
            )
        return
    if outside_api(response, case, collector.profile.api_prefix):
        return
    if not _declared(status, case.operation.responses.status_codes) and not convention_status(
        collector.profile, response, case
    ):
        collector.add(
            check="status_code_conformance",
            operation=operation,
            status=status,
            message=f"undeclared status {status} on unusual input ({description})",
            curl=curl,
        )
    if 400 <= status < 500:
        try:
            check_error_envelope(response, case, collector)
        except EnvelopeFailure as failure:
            collector.add(
                check="error_envelope",
                operation=operation,
                status=status,
                message=f"{failure.message} (unusual input: {description})",
                curl=curl,
                requirement=failure.requirement,
            )


def _resolve(schema: Any, bundle: Mapping[str, Any]) -> Any:
    for _ in range(32):
        reference = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(reference, str) or not reference.startswith("#/x-bundled/"):
            return schema
        schema = bundle.get(reference.rsplit("/", 1)[-1], {})
    return schema


def _object_branch(schema: Any, bundle: Mapping[str, Any]) -> Any:
    """The object alternative of a schema (``anyOf: [{object}, {null}]`` and the like)."""
    schema = _resolve(schema, bundle)
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        return schema
    for keyword in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(keyword) or []:
            found = _object_branch(branch, bundle)
            if found is not None:
                return found
    return None


def _filler(schema: Any, bundle: Mapping[str, Any]) -> tuple[bool, Any]:
    """A value for an absent optional member: {} for a free-form object, text for a plain string."""
    schema = _resolve(schema, bundle)
    if not isinstance(schema, dict) or any(key in schema for key in ("enum", "const", "format", "pattern")):
        return False, None
    kinds = schema.get("type")
    kinds = {kinds} if isinstance(kinds, str) else set(kinds or [])
    if "object" in kinds and not schema.get("properties") and not schema.get("required"):
        return True, {}
    if "string" in kinds:
        return True, "x" * max(1, int(schema.get("minLength", 1)))
    return False, None


def _normalised(value: Any, schema: Any, bundle: Mapping[str, Any], depth: int = 0) -> Any:
    """``value`` reduced to what its schema declares, with the absent optional members filled in.

    Undeclared members (hypothesis adds plenty) are dropped and free-form objects emptied, so the probes
    are not spent on noise; absent optional free-form objects and plain strings are added, since the
    probes can only mutate what the base request carries (say ``content.metadata``).
    """
    branch = _object_branch(schema, bundle)
    if not isinstance(value, dict) or branch is None or depth > 8:
        return value
    properties = branch.get("properties") or {}
    if not properties:
        return {}  # free-form: the probes add their own members
    normalised = {
        name: _normalised(item, properties[name], bundle, depth + 1)
        for name, item in value.items()
        if name in properties
    }
    for name, member in properties.items():
        if name not in normalised:
            usable, filler = _filler(member, bundle)
            if usable:
                normalised[name] = filler
    return normalised


def _completed_base(case: Any) -> Any | None:
    if not isinstance(case.body, dict):
        return None
    for alternative in case.operation.body:
        if alternative.media_type != case.media_type:
            continue
        schema = alternative.optimized_schema
        bundle = schema.get("x-bundled", {}) if isinstance(schema, dict) else {}
        body = _normalised(case.body, schema, bundle)
        return derived(case, body=body) if body != case.body else None
    return None


def probe_unusual_inputs(
    collector: Collector, headers: Mapping[str, str], *, deadline: float, timeout: float
) -> None:
    import requests

    for original in collector.bases():
        base = original
        try:
            completed = _completed_base(original)
            if completed is not None and time.monotonic() + min(timeout, 1.0) < deadline:
                response = completed.call(headers=dict(headers))
                collector.count(1)
                _judge_probe(
                    collector, completed, response, "base request reduced to the declared members", headers
                )
                if 200 <= response.status_code < 300:
                    base = completed
        except Exception:
            base = original
        for sent, (description, case) in enumerate(_probes(base)):
            if sent >= _MAX_PROBES_PER_OPERATION or time.monotonic() + min(timeout, 1.0) >= deadline:
                break
            try:
                response = case.call(headers=dict(headers))
            except (requests.Timeout, requests.ConnectionError) as exc:
                collector.add(
                    check="transport_error",
                    operation=operation_label(None, case),
                    status=None,
                    message=f"{type(exc).__name__} on unusual input ({description})",
                    curl=str(case.as_curl_command(headers=dict(headers))),
                )
                continue
            except Exception:
                continue  # a request the client cannot even build: not the server's fault
            collector.count(1)
            try:
                _judge_probe(collector, case, response, description, headers)
            except Exception as exc:  # a bug in judging one answer must not end the run
                collector.error(f"cannot judge a probe answer: {type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------------------------------------------
# Minimising 5xx reproductions (the engine stops a hypothesis test at its first failure without shrinking)
# ---------------------------------------------------------------------------------------------------------
_MAX_MINIMISE_REQUESTS: Final = 200


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every member / element path below ``value``, shallowest first within each branch."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index in reversed(range(len(value))):  # deleting from the end keeps earlier indices valid
            yield (*path, index)
            yield from _paths(value[index], (*path, index))


def _get(value: Any, path: tuple[str | int, ...]) -> tuple[bool, Any]:
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
            continue
        if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
            continue
        return False, None
    return True, value


def _delete(value: Any, path: tuple[str | int, ...]) -> Any:
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        if not rest:
            return {k: v for k, v in value.items() if k != head}
        return {**value, head: _delete(value[head], rest)}
    index = int(head)
    if not rest:
        return value[:index] + value[index + 1 :]
    return [*value[:index], _delete(value[index], rest), *value[index + 1 :]]


def derived(case: Any, *, body: Any = None, query: dict[str, Any] | None = None, headers: Any = None) -> Any:
    """A copy of a schemathesis case with another body, query or headers."""
    result = case.derive(query=query, headers=headers)
    object.__setattr__(result, "_meta", None)  # a hand-made request, not a generated one
    if body is not None:
        object.__setattr__(result, "body", body)
    return result


def _minimise(case: Any, status: int, headers: Mapping[str, str], deadline: float) -> Any | None:
    """A smaller variant of ``case`` (fewer members, shorter strings) still answered with ``status``."""
    sent = 0

    def reproduces(candidate: Any) -> bool:
        nonlocal sent
        sent += 1
        try:
            response = candidate.call(headers=dict(headers))
        except Exception:
            return False
        return bool(response.status_code == status)

    def exhausted() -> bool:
        return sent >= _MAX_MINIMISE_REQUESTS or time.monotonic() >= deadline

    if not reproduces(derived(case)):
        return None
    current = case
    configured = {name.lower() for name in headers}
    for name in [name for name in current.headers if name.lower() not in configured]:
        if exhausted():
            return current
        kept = current.headers.copy()
        del kept[name]
        candidate = derived(current, headers=kept)
        if reproduces(candidate):
            current = candidate
    for name in list(current.query):
        if exhausted():
            return current
        candidate = derived(current, query={k: v for k, v in current.query.items() if k != name})
        if reproduces(candidate):
            current = candidate
    if not isinstance(current.body, dict | list):
        return current
    # Drop members and elements (whole subtrees first), then shorten the strings that are left.
    for path in list(_paths(current.body)):
        if exhausted():
            return current
        if _get(current.body, path)[0]:
            candidate = derived(current, body=_delete(current.body, path))
            if reproduces(candidate):
                current = candidate
    for path, value in list(_walk(current.body)):
        while isinstance(value, str) and len(value) > 1 and not exhausted():
            half = len(value) // 2
            for part in (value[:half], value[half:]):
                candidate = derived(current, body=_set(current.body, path, part))
                if reproduces(candidate):
                    current, value = candidate, part
                    break
            else:
                break
    return current


def minimise_findings(collector: Collector, headers: Mapping[str, str], deadline: float) -> None:
    for key, case in collector.cases().items():
        status = key[2]
        if status is None or time.monotonic() >= deadline:
            continue
        try:
            smallest = _minimise(case, status, headers, deadline)
            if smallest is not None and smallest is not case:
                collector.replace_curl(key, str(smallest.as_curl_command(headers=dict(headers))))
        except Exception:
            continue  # the engine's own reproduction stays
