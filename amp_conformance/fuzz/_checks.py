"""The checks a fuzz run applies: schemathesis's own (wrapped per CHECK_POLICY) and the AMP error envelope.

The wrappers are registered with schemathesis only for the duration of a run, under names of our own
(``amp_<check>``), and are bound to that run's collector, so importing this package changes nothing
for other schemathesis users in the process. Each wrapper applies the AMP exemptions before calling the
schemathesis check: nothing is asserted about 404/405 answers that routing gave outside the AMP routes
(requirements.md C-29), and a 5xx is reported once, by ``not_a_server_error``. "warn" checks never
raise inside schemathesis (a raised failure would stop hypothesis exploring that operation and could
hide a real 5xx behind a disputed finding); they are recorded on the side instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from amp_conformance.amp01.envelope import envelope_problems, validation_error_problems
from amp_conformance.fuzz._collect import Collector
from amp_conformance.fuzz._model import API_PREFIX, CHECK_POLICY, FAIL, OFF

if TYPE_CHECKING:
    from schemathesis import Case, CheckContext, Response

CheckFunction = Callable[..., bool | None]

WRAPPER_PREFIX: Final = "amp_"
# Statuses a schema-valid request may legitimately get in AMP (see positive_data_acceptance in
# CHECK_POLICY): 413 CELL_TOO_LARGE is added to the schemathesis defaults.
POSITIVE_STATUSES: Final = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]


def _route_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]*\})", template)
    regex = "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in parts)
    # Matched against the end of the path: a contract may give paths relative to a server prefix.
    return re.compile(f"{regex}/?$")


def _request_method(response: Response, case: Case[Any]) -> str:
    method = getattr(response.request, "method", None)
    return str(method or case.method).upper()


def operation_label(response: Response | None, case: Case[Any]) -> str:
    """``METHOD /path/{template}`` of the request actually sent (a probe may use another method)."""
    method = _request_method(response, case) if response is not None else str(case.method).upper()
    return f"{method} {case.operation.path}"


def outside_api(response: Response, case: Case[Any]) -> bool:
    """C-29: a 404/405 that routing produced outside the AMP routes (unknown path or wrong method)."""
    status = response.status_code
    if status == 405:
        return True
    if status != 404:
        return False
    if _request_method(response, case) != str(case.operation.method).upper():
        return True
    url = str(getattr(response.request, "url", "") or "")
    path = unquote(urlsplit(url).path)
    if not path.startswith(API_PREFIX):
        return True
    # A path parameter holding "/" (or nothing) moves the request to another route, or to none.
    return _route_pattern(case.operation.path).search(path) is None


def curl_for(response: Response, case: Case[Any]) -> str:
    """The request as sent (headers included), as a curl line."""
    try:
        headers = dict(response.request.headers)
        return str(case.as_curl_command(headers=headers, verify=response.verify))
    except Exception:  # a curl line is a convenience, never a reason to crash
        return ""


def record(collector: Collector, check: str, response: Response, case: Case[Any], message: str) -> None:
    """Record a finding found outside schemathesis's failure machinery (warn checks, details)."""
    collector.add(
        check=check,
        operation=operation_label(response, case),
        status=response.status_code,
        message=message,
        curl=curl_for(response, case),
    )


class EnvelopeFailure(AssertionError):
    """A 4xx body that is not the AMP error envelope."""

    def __init__(self, message: str, requirement: str) -> None:
        super().__init__(message)
        self.title = "AMP error envelope"
        self.message = message
        self.requirement = requirement


def failure_text(exc: BaseException) -> str:
    """``title: message`` of a schemathesis failure (ours: the envelope message)."""
    inner = getattr(exc, "exception", None)
    if isinstance(inner, EnvelopeFailure):
        return inner.message
    title = getattr(exc, "title", None)
    message = getattr(exc, "message", None)
    if title is not None and message is not None:
        return f"{title}: {message}" if message else str(title)
    return str(exc)


def _is_create_with_creator(case: Case[Any]) -> bool:
    body = case.body if isinstance(case.body, dict) else None
    identity = body.get("identity") if body is not None else None
    return (
        str(case.operation.method).upper() == "POST"
        and case.operation.path == f"{API_PREFIX}/memories"
        and isinstance(identity, dict)
        and bool(identity.get("created_by"))
    )


def _envelope_requirement(status: int, problems: list[str]) -> str:
    text = " ".join(problems)
    if "framework default" in text:
        return "AMP-ERR-05"
    structural = (
        "not JSON",
        "not an object",
        "missing object member",
        "code is missing",
        "message is missing",
    )
    if any(marker in text for marker in structural) or "Content-Type" in text:
        return "AMP-ERR-01"
    if "SCREAMING_SNAKE_CASE" in text:
        return "AMP-ERR-02"
    if status == 422:
        return "AMP-ERR-04"
    return "AMP-ERR-01"


def check_error_envelope(response: Response, case: Case[Any], collector: Collector | None) -> None:
    """Every 4xx from an AMP route is ``{"error": {"code", "message", "details"}}`` (AMP-ERR-01/02/04/05).

    Raises :class:`EnvelopeFailure`; a missing ``details`` (a SHOULD) is recorded as a warning instead.
    """
    status = response.status_code
    if not 400 <= status < 500 or outside_api(response, case):
        return
    problems: list[str] = []
    content_type = (response.headers.get("content-type") or [""])[0]
    if "json" not in content_type.lower():
        problems.append(f"Content-Type is {content_type or 'missing'!r}, not application/json")
    try:
        body = response.json()
    except Exception:
        body = None
        text = bytes(response.content or b"")[:120].decode("utf-8", "replace")
        problems.append(f"the body is not JSON: {text!r}")
    else:
        problems += (
            validation_error_problems(body)
            if status == 422
            else envelope_problems(body, require_details=False)
        )
    if problems:
        raise EnvelopeFailure(
            f"{status} body is not the AMP error envelope: " + "; ".join(problems),
            _envelope_requirement(status, problems),
        )
    error = body.get("error") if isinstance(body, dict) else None
    if collector is not None and isinstance(error, dict) and "details" not in error:
        record(
            collector,
            "error_envelope_details",
            response,
            case,
            f"{status} error envelope without error.details",
        )


def builtin_checks() -> dict[str, CheckFunction]:
    """schemathesis's function checks that CHECK_POLICY names."""
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    found: dict[str, CheckFunction] = {}
    for name in CHECK_POLICY:
        try:
            item = CHECKS.get_one(name)
        except KeyError:
            continue
        if callable(item) and not isinstance(item, type):
            found[name] = item
    return found


def _named(function: CheckFunction, name: str) -> CheckFunction:
    function.__name__ = WRAPPER_PREFIX + name
    function.__qualname__ = function.__name__
    return function


def _fail_wrapper(name: str, check: CheckFunction) -> CheckFunction:
    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if name != "not_a_server_error":
            if response.status_code >= 500:
                return None  # reported once, by not_a_server_error
            if outside_api(response, case):
                return None  # C-29: nothing is asserted on 404/405 outside the AMP routes
        return check(ctx, response, case)

    return _named(wrapper, name)


def _warn_wrapper(name: str, check: CheckFunction, collector: Collector) -> CheckFunction:
    from schemathesis.core.failures import Failure, FailureGroup

    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if response.status_code >= 500 or outside_api(response, case):
            return None  # 5xx: reported by not_a_server_error; 404/405 outside the AMP routes: C-29
        if name == "missing_required_header" and _is_create_with_creator(case):
            return None  # keyless create falls back to identity.created_by (AMP-AUTH-01)
        try:
            check(ctx, response, case)
        except FailureGroup as group:
            for failure in group.exceptions:
                record(collector, name, response, case, failure_text(failure))
        except (Failure, AssertionError) as failure:
            record(collector, name, response, case, failure_text(failure))
        return None

    return _named(wrapper, name)


def _envelope_wrapper(collector: Collector) -> CheckFunction:
    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        check_error_envelope(response, case, collector)
        return None

    return _named(wrapper, "error_envelope")


def wrappers(collector: Collector) -> list[CheckFunction]:
    """The run's checks: every schemathesis check CHECK_POLICY does not switch off, plus ours."""
    builtins = builtin_checks()
    result: list[CheckFunction] = []
    for name, (severity, _requirement, _reason) in CHECK_POLICY.items():
        check = builtins.get(name)
        if check is None or severity == OFF:
            continue
        result.append(
            _fail_wrapper(name, check) if severity == FAIL else _warn_wrapper(name, check, collector)
        )
    result.append(_envelope_wrapper(collector))
    return result


@contextmanager
def registered_checks(collector: Collector) -> Iterator[list[str]]:
    """Register the run's checks with schemathesis; yields their names, unregisters them afterwards."""
    from schemathesis.checks import CHECKS

    functions = wrappers(collector)
    names = [function.__name__ for function in functions]
    for function in functions:
        CHECKS.register(function)
    try:
        yield names
    finally:
        for name in names:
            with suppress(KeyError):
                CHECKS.unregister(name)
