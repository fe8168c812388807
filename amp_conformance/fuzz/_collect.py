"""Where a run's findings, errors and probe material are gathered (thread-safe), and curl lines cleaned."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from amp_conformance.fuzz._model import FAIL, FuzzFinding, FuzzProfile

_SECRET_HEADER: Final = re.compile(r"(key|token|secret|authorization|password|cookie)", re.IGNORECASE)
_VARIABLE_NAMES: Final = {
    "x-amp-api-key": "AMP_API_KEY",
    "x-amp-admin-token": "AMP_ADMIN_TOKEN",
    "authorization": "AMP_AUTHORIZATION",
}
IN_PROCESS_ORIGIN: Final = "http://testserver"
"""Host schemathesis's in-process client sends to; curl lines show the configured origin instead."""
_MAX_MESSAGE: Final = 600

FindingKey = tuple[str, str, int | None]


def leaf_count(value: Any) -> int:
    """Size of a JSON value: containers count one plus their items."""
    if isinstance(value, dict):
        return sum(leaf_count(item) for item in value.values()) + 1
    if isinstance(value, list):
        return sum(leaf_count(item) for item in value) + 1
    return 1


class Collector:
    """Thread-safe store of findings for one run (schemathesis checks run in worker threads)."""

    def __init__(
        self,
        *,
        seed: int,
        origin: str,
        secrets: Mapping[str, str],
        profile: FuzzProfile,
        on_requests: Callable[[int], None] | None = None,
    ) -> None:
        self.seed = seed
        self.on_requests = on_requests
        self.profile = profile
        self.origin = origin
        self.secrets = dict(secrets)
        self._lock = threading.Lock()
        self._findings: dict[FindingKey, FuzzFinding] = {}
        self._errors: dict[str, None] = {}
        self._cases: dict[FindingKey, Any] = {}
        self._bases: dict[str, tuple[tuple[bool, int], Any]] = {}
        self.examples = 0
        self.operations = 0

    def add(
        self,
        *,
        check: str,
        operation: str,
        status: int | None,
        message: str,
        curl: str,
        requirement: str | None = None,
        severity: str | None = None,
        case: Any = None,
    ) -> None:
        policy_severity = self.profile.severity(check)
        finding = FuzzFinding(
            check=check,
            requirement=requirement or self.profile.requirement_for(check, status),
            severity=severity or policy_severity,
            operation=operation,
            message=_mask_secrets(_shorten(message), self.secrets),
            curl=self.render_curl(curl),
            status=status,
            seed=self.seed,
        )
        key = (check, operation, status)
        with self._lock:
            known = self._findings.get(key)
            if known is None or _better(finding, known):
                self._findings[key] = finding
                if case is not None:
                    self._cases[key] = case

    def replace_curl(self, key: FindingKey, curl: str) -> None:
        with self._lock:
            known = self._findings.get(key)
            if known is not None:
                self._findings[key] = replace(known, curl=self.render_curl(curl))

    def offer_base(self, case: Any, status: int) -> None:
        """Keep, per operation, the richest request the server answered without a 5xx (probe material)."""
        if status >= 500 or str(case.method).upper() != str(case.operation.method).upper():
            return
        score = (200 <= status < 300, leaf_count(case.body) + len(case.query) + len(case.path_parameters))
        label = str(case.operation.label)
        with self._lock:
            known = self._bases.get(label)
            if known is None or score > known[0]:
                self._bases[label] = (score, case)

    def bases(self) -> list[Any]:
        """Base requests, richest first (the probes may not get through all of them in time)."""
        with self._lock:
            ranked = sorted(self._bases.values(), key=lambda item: item[0][1], reverse=True)
        return [case for _, case in ranked]

    def cases(self) -> dict[FindingKey, Any]:
        """Schemathesis cases of the 5xx findings, for minimisation."""
        with self._lock:
            return dict(self._cases)

    def error(self, message: str) -> None:
        with self._lock:
            self._errors.setdefault(_shorten(message), None)

    def count(self, requests: int) -> None:
        with self._lock:
            self.examples += requests
        if self.on_requests is not None:
            self.on_requests(requests)

    def findings(self) -> list[FuzzFinding]:
        with self._lock:
            values = list(self._findings.values())
        return sorted(values, key=lambda f: (f.severity != FAIL, f.operation, f.check, f.status or 0))

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    def render_curl(self, curl: str) -> str:
        """Keep the command only, point it at the real origin, and hide the configured secrets."""
        command = curl.split("\n\n⚠", 1)[0].strip()
        command = command.replace(IN_PROCESS_ORIGIN, self.origin)
        return _mask_secrets(command, self.secrets)


def _better(new: FuzzFinding, old: FuzzFinding) -> bool:
    """Between two findings with one key: fail beats warn, then the shorter (more shrunk) request."""
    if new.severity != old.severity:
        return new.severity == FAIL
    return bool(new.curl) and (not old.curl or len(new.curl) < len(old.curl))


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _variable_for(header: str) -> str:
    known = _VARIABLE_NAMES.get(header.lower())
    if known is not None:
        return known
    name = re.sub(r"[^A-Za-z0-9]+", "_", header).strip("_").upper()
    name = name.removeprefix("X_")
    return name if name.startswith("AMP_") else f"AMP_{name}"


def secret_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Configured header values to hide in curl lines, mapped to the shell variable replacing them."""
    return {
        value: _variable_for(name)
        for name, value in headers.items()
        if value and _SECRET_HEADER.search(name) and len(value) >= 4
    }


def _quoted_variable(variable: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return f'"{match.group(1)}${variable}"'

    return replace


def _mask_secrets(command: str, secrets: Mapping[str, str]) -> str:
    for value, variable in secrets.items():
        # `'X-AMP-API-Key: s3cret'` (shlex-quoted header) -> `"X-AMP-API-Key: $AMP_API_KEY"`.
        quoted = re.compile(r"'([A-Za-z0-9!#%&*+.^_`|~-]+: )" + re.escape(value) + "'")
        command = quoted.sub(_quoted_variable(variable), command)
        command = command.replace(value, f"${{{variable}}}")
    return command
