"""The server's own OpenAPI document: fetching it and comparing it with ours."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import httpx

from amp_conformance.fuzz._model import origin_of, server_prefix


def load_openapi(source: str | None, timeout: float) -> dict[str, Any] | None:
    """The ``--openapi`` contract (a path or an http(s) URL), or None when none was given; a
    document that cannot be read or is not a JSON object is the tool's error (ToolError)."""
    from amp_conformance.engine.outcomes import ToolError

    if source is None:
        return None
    try:
        if source.startswith(("http://", "https://")):
            document = httpx.get(source, timeout=timeout).json()
        else:
            document = json.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, ValueError, httpx.HTTPError) as exc:
        raise ToolError(f"cannot load --openapi {source}: {exc}") from None
    if not isinstance(document, dict):
        raise ToolError(f"--openapi {source} is not a JSON object")
    return document


def fetch_served_contract(
    base_url: str,
    *,
    api_prefix: str,
    headers: Mapping[str, str] | None = None,
    timeout: float = 5.0,
    transport: httpx.BaseTransport | None = None,
) -> tuple[dict[str, Any] | None, list[str]]:
    """The server's OpenAPI document: ``{origin}/openapi.json``, else ``{origin}{api_prefix}/openapi.json``.

    Returns the document (or None) and notes (why it was not found, or that the fallback was used).
    """
    origin = origin_of(base_url, api_prefix)
    notes: list[str] = []
    candidates = [f"{origin}/openapi.json", f"{origin}{api_prefix}/openapi.json"]
    try:
        with httpx.Client(transport=transport, timeout=timeout, headers=dict(headers or {})) as client:
            for index, url in enumerate(candidates):
                try:
                    reply = client.get(url)
                except httpx.HTTPError as exc:
                    notes.append(f"GET {url}: {type(exc).__name__}: {exc}")
                    continue
                if reply.status_code != 200:
                    notes.append(f"GET {url}: {reply.status_code}")
                    continue
                try:
                    document = reply.json()
                except ValueError:
                    notes.append(f"GET {url}: 200 but the body is not JSON")
                    continue
                if not isinstance(document, dict):
                    notes.append(f"GET {url}: 200 but the body is not a JSON object")
                    continue
                if index:
                    notes.append(f"the OpenAPI document is served at {url}, not at the origin root")
                return document, notes
    except Exception as exc:  # pragma: no cover - never raise
        notes.append(f"cannot fetch the OpenAPI document: {type(exc).__name__}: {exc}")
    return None, notes


_HTTP_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _routes(document: Mapping[str, Any], api_prefix: str) -> dict[str, dict[str, set[str]]]:
    """{normalised path: {METHOD: {declared statuses}}}; parameter names are ignored, paths carry the
    API prefix."""
    prefix = server_prefix(document)
    routes: dict[str, dict[str, set[str]]] = {}
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        return routes
    for raw_path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        path = str(raw_path)
        if not path.startswith(api_prefix) and prefix and not path.startswith(prefix + "/"):
            path = prefix + path
        path = re.sub(r"\{[^}]*\}", "{}", path).rstrip("/") or "/"
        methods = routes.setdefault(path, {})
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            responses = operation.get("responses")
            statuses = {str(code) for code in responses} if isinstance(responses, Mapping) else set()
            methods.setdefault(method.upper(), set()).update(statuses)
    return routes


def compare_served_contract(
    served: Mapping[str, Any], ours: Mapping[str, Any], *, api_prefix: str
) -> list[str]:
    """Differences between the server's OpenAPI document and ours: routes, methods, declared statuses.

    Each difference is one human-readable warning; an empty list means they agree on all three.
    Path parameter names are not compared (``{id}`` and ``{memory_id}`` are the same route).
    """
    warnings: list[str] = []
    served_routes, our_routes = _routes(served, api_prefix), _routes(ours, api_prefix)
    for path in sorted(set(our_routes) - set(served_routes)):
        methods = ", ".join(sorted(our_routes[path]))
        warnings.append(f"route {path} ({methods}) is missing from the served document")
    for path in sorted(set(served_routes) - set(our_routes)):
        methods = ", ".join(sorted(served_routes[path]))
        warnings.append(f"route {path} ({methods}) is served but not in our contract")
    for path in sorted(set(served_routes) & set(our_routes)):
        served_methods, our_methods = served_routes[path], our_routes[path]
        for method in sorted(set(our_methods) - set(served_methods)):
            warnings.append(f"{method} {path} is missing from the served document")
        for method in sorted(set(served_methods) - set(our_methods)):
            warnings.append(f"{method} {path} is served but not in our contract")
        for method in sorted(set(served_methods) & set(our_methods)):
            missing = sorted(our_methods[method] - served_methods[method])
            extra = sorted(served_methods[method] - our_methods[method])
            if missing:
                listed = ", ".join(missing)
                warnings.append(f"{method} {path}: statuses {listed} are not declared by the server")
            if extra:
                listed = ", ".join(extra)
                warnings.append(f"{method} {path}: statuses {listed} are declared only by the server")
    return warnings
