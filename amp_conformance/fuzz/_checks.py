"""The checks a fuzz run applies: schemathesis's own (wrapped per the profile's policy) and the protocol's
error envelope.

The wrappers are registered with schemathesis only for the duration of a run, under names of our own
(``amp_<check>``), and are bound to that run's collector, so importing this package changes nothing
for other schemathesis users in the process. Each wrapper applies the exemptions before calling the
schemathesis check: nothing is asserted about 404/405 answers that routing gave outside the protocol's
routes (the profile's ``api_prefix``), a 5xx the profile documents is no finding, nor is a status a
detected convention documents for the route (``documented_status``), and a 5xx is reported
once, by ``not_a_server_error``. "warn" checks never raise inside schemathesis (a raised failure would
stop hypothesis exploring that operation and could hide a real 5xx behind a disputed finding); they are
recorded on the side instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from amp_conformance.fuzz._collect import Collector
from amp_conformance.fuzz._model import CHECK_NAMES, FAIL, OFF, FuzzProfile

if TYPE_CHECKING:
    from schemathesis import Case, CheckContext, Response

CheckFunction = Callable[..., bool | None]

WRAPPER_PREFIX: Final = "amp_"
# Statuses a schema-valid request may legitimately get (see positive_data_acceptance in a profile's
# policy): 413 (a size limit no schema expresses) is added to the schemathesis defaults.
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


def outside_api(response: Response, case: Case[Any], prefix: str) -> bool:
    """A 404/405 that routing produced outside the protocol's routes (unknown path or wrong method)."""
    status = response.status_code
    if status == 405:
        return True
    if status != 404:
        return False
    if _request_method(response, case) != str(case.operation.method).upper():
        return True
    url = str(getattr(response.request, "url", "") or "")
    path = unquote(urlsplit(url).path)
    if not path.startswith(prefix):
        return True
    # A path parameter holding "/" (or nothing) moves the request to another route, or to none.
    return _route_pattern(case.operation.path).search(path) is None


def convention_status(profile: FuzzProfile, response: Response, case: Case[Any]) -> bool:
    """The answered status is one a detected convention documents for the route (the profile's
    ``documented_status``): no undeclared-status finding."""
    method = _request_method(response, case)
    return profile.documented_status(method, str(case.operation.path), int(response.status_code))


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
    """A 4xx body that is not the protocol's error envelope."""

    def __init__(self, message: str, requirement: str) -> None:
        super().__init__(message)
        self.title = "error envelope"
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


def check_error_envelope(response: Response, case: Case[Any], collector: Collector) -> None:
    """Every 4xx from a protocol route uses the profile's error envelope.

    Raises :class:`EnvelopeFailure`; missing optional details are recorded as a warning instead.
    """
    profile = collector.profile
    status = response.status_code
    if profile.envelope_problems is None or not 400 <= status < 500:
        return
    if outside_api(response, case, profile.api_prefix):
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
        problems += profile.envelope_problems(status, body)
    if problems:
        requirement = (
            profile.envelope_requirement(status, problems)
            if profile.envelope_requirement is not None
            else profile.requirement_for("error_envelope", status)
        )
        raise EnvelopeFailure(f"{status} body is not the error envelope: " + "; ".join(problems), requirement)
    if profile.details_missing is not None and profile.details_missing(body):
        record(
            collector, "error_envelope_details", response, case, f"{status} error envelope without details"
        )


def builtin_checks() -> dict[str, CheckFunction]:
    """schemathesis's function checks that a policy may name."""
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    found: dict[str, CheckFunction] = {}
    for name in CHECK_NAMES:
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


def _fail_wrapper(name: str, check: CheckFunction, collector: Collector) -> CheckFunction:
    profile = collector.profile

    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if response.status_code >= 500 and profile.allowed_server_error(response):
            return None  # a 5xx the protocol documents (a reported backend error)
        if name != "not_a_server_error":
            if response.status_code >= 500:
                return None  # reported once, by not_a_server_error
            if outside_api(response, case, profile.api_prefix):
                return None  # nothing is asserted on 404/405 outside the protocol's routes
        if name == "status_code_conformance" and convention_status(profile, response, case):
            return None  # a status a detected convention documents for the route
        return check(ctx, response, case)

    return _named(wrapper, name)


def _warn_wrapper(name: str, check: CheckFunction, collector: Collector) -> CheckFunction:
    from schemathesis.core.failures import Failure, FailureGroup

    profile = collector.profile

    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if response.status_code >= 500 or outside_api(response, case, profile.api_prefix):
            return None  # 5xx: reported by not_a_server_error; 404/405 outside the routes: routing's
        if name == "missing_required_header" and profile.header_exempt(case):
            return None  # the profile documents this case (e.g. a keyless fallback identity)
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
    """The run's checks: every schemathesis check the policy does not switch off, plus ours."""
    builtins = builtin_checks()
    result: list[CheckFunction] = []
    for name, (severity, _requirement, _reason) in collector.profile.policy.items():
        check = builtins.get(name)
        if check is None or severity == OFF:
            continue
        result.append(
            _fail_wrapper(name, check, collector)
            if severity == FAIL
            else _warn_wrapper(name, check, collector)
        )
    if collector.profile.envelope_problems is not None:
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
