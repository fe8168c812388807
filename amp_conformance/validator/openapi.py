"""Load an OpenAPI document (file or URL) and read it: operations, ``$ref``s, the error envelope.

``$ref``s are resolved with ``referencing`` (shipped with jsonschema) over the document itself, so a
response or schema may live under ``components`` at any depth; references to other files are
reported, not fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import httpx
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

API_PREFIX: Final = "/amp/v1"
METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
ENVELOPE_MEMBERS: Final = ("code", "message", "details")
if TYPE_CHECKING:  # referencing exports the class only from its private module
    from referencing._core import Resolver as _Resolver

    Resolver = _Resolver[Any]

_BASE_URI: Final = "urn:amp-conformance:openapi-document"
_MAX_REF_HOPS: Final = 64
_TEMPLATE = re.compile(r"\{[^}/]*\}")


class DocumentError(Exception):
    """The document cannot be fetched, read or parsed, or is not an OpenAPI document."""


class RefError(Exception):
    """A ``$ref`` that does not resolve inside the document."""


@dataclass(frozen=True, slots=True)
class Operation:
    """One method on one route; ``key`` ignores path-parameter names (``{id}`` ≡ ``{memory_id}``)."""

    route: str
    method: str
    spec: Mapping[str, Any]
    resolver: Resolver

    @property
    def key(self) -> tuple[str, str]:
        return (route_key(self.route), self.method)


def load_document(location: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Parse an OpenAPI document (JSON) from a path or an http(s) URL."""
    if location.startswith(("http://", "https://")):
        if any(c.isspace() for c in location):
            raise DocumentError("not a valid URL: it contains a space (percent-encode it as %20)")
        try:
            response = httpx.get(location, timeout=timeout, follow_redirects=True)
        except httpx.InvalidURL as exc:  # not an HTTPError: a typo in the URL, one line
            raise DocumentError(f"not a valid URL: {exc}") from None
        except httpx.HTTPError as exc:
            raise DocumentError(f"cannot fetch: {exc}") from None
        if response.status_code != 200:
            raise DocumentError(f"cannot fetch: HTTP {response.status_code}")
        text = response.text
    else:
        try:
            text = Path(location).read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise DocumentError(f"cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise DocumentError("not UTF-8 text") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise DocumentError(f"not JSON ({exc}); only JSON OpenAPI documents are supported") from None
    check_document(document)
    return dict(document)


def check_document(document: object) -> None:
    """Refuse anything without a ``paths`` object: comparing it would report every route missing."""
    if not isinstance(document, Mapping) or not isinstance(document.get("paths"), Mapping):
        raise DocumentError("not an OpenAPI document: no 'paths' object")


def route_key(route: str) -> str:
    """Route with path parameters anonymised, for matching."""
    return _TEMPLATE.sub("{}", route.rstrip("/") or "/")


def _route_prefix(document: Mapping[str, Any]) -> str:
    """``/amp/v1`` when the first server URL ends with it, i.e. paths are relative to the API base."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
        url = servers[0].get("url")
        if isinstance(url, str) and urlsplit(url).path.rstrip("/").endswith(API_PREFIX):
            return API_PREFIX
    return ""


def operations(document: Mapping[str, Any]) -> Iterator[Operation]:
    """Every operation, with full ``/amp/v1/...`` routes; path items may be ``$ref``s.

    A path item whose ``$ref`` does not resolve makes the document unusable (``DocumentError``):
    its methods are unknown, so every comparison with it would be a guess.
    """
    root = resolver_for(document)
    prefix = _route_prefix(document)
    for route, item in document["paths"].items():
        full = route if not prefix or route.startswith(prefix + "/") or route == prefix else prefix + route
        try:
            path_item, resolver = deref(item, root)
        except RefError as exc:
            raise DocumentError(f"path {route!r}: {exc}") from None
        if not isinstance(path_item, Mapping):
            continue
        for method in METHODS:
            spec = path_item.get(method)
            if isinstance(spec, Mapping):
                yield Operation(full, method.upper(), spec, resolver)


def resolver_for(document: Mapping[str, Any]) -> Resolver:
    """A resolver of ``#/...`` references inside ``document`` (opaque: no JSON Schema ``$id`` scoping)."""
    registry: Registry[Any] = Registry().with_resource(_BASE_URI, Resource.opaque(document))
    resolver: Resolver = registry.resolver(_BASE_URI)
    return resolver


def deref(node: object, resolver: Resolver) -> tuple[object, Resolver]:
    """Follow ``$ref`` until a node without one; raises ``RefError`` on a dangling or looping ref."""
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(node, Mapping) or not isinstance(node.get("$ref"), str):
            return node, resolver
        ref = node["$ref"]
        try:
            resolved = resolver.lookup(ref)
        except Unresolvable:
            raise RefError(f"$ref {ref!r} does not resolve inside the document") from None
        node, resolver = resolved.contents, resolved.resolver
    raise RefError("$ref chain too long (a reference loop?)")


def statuses(operation: Operation) -> set[str]:
    responses = operation.spec.get("responses")
    return {str(code) for code in responses} if isinstance(responses, Mapping) else set()


def declares(declared: set[str], status: str) -> bool:
    """Whether ``declared`` covers ``status``, directly or by a range such as ``4XX``."""
    return status in declared or f"{status[:1]}XX" in declared or f"{status[:1]}xx" in declared


def envelope_problem(operation: Operation, status: str) -> str | None:
    """Why the response ``status`` lacks the ``{"error": {code, message, details}}`` envelope, or None."""
    response, resolver = deref(operation.spec["responses"][status], operation.resolver)
    content = response.get("content") if isinstance(response, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        return "declares no response body"
    media = content.get("application/json")
    if media is None:
        media = next((v for k, v in content.items() if "json" in str(k)), None)
    media, resolver = deref(media, resolver)
    if not isinstance(media, Mapping) or "schema" not in media:
        return "declares no JSON schema for its body"
    properties, required = _members(media["schema"], resolver)
    if "error" not in properties:
        return "body schema has no 'error' member (expected the {error: {code, message, details}} envelope)"
    if "error" not in required:
        return "body schema does not require 'error'"
    inner, inner_required = _members(*properties["error"])
    missing = [m for m in ENVELOPE_MEMBERS if m not in inner]
    if missing:
        return f"'error' object lacks {', '.join(repr(m) for m in missing)}"
    loose = [m for m in ("code", "message") if m not in inner_required]
    if loose:
        return f"'error' object does not require {', '.join(repr(m) for m in loose)}"
    return None


def _members(schema: object, resolver: Resolver) -> tuple[dict[str, tuple[object, Resolver]], set[str]]:
    """Properties (each with its resolver) and required names of an object schema, ``allOf`` merged."""
    schema, resolver = deref(schema, resolver)
    properties: dict[str, tuple[object, Resolver]] = {}
    required: set[str] = set()
    if not isinstance(schema, Mapping):
        return properties, required
    declared = schema.get("properties")
    if isinstance(declared, Mapping):
        properties.update({str(k): (v, resolver) for k, v in declared.items()})
    names = schema.get("required")
    if isinstance(names, list):
        required.update(str(n) for n in names)
    parts = schema.get("allOf")
    for part in parts if isinstance(parts, list) else []:
        more, more_required = _members(part, resolver)
        properties.update(more)
        required |= more_required
    return properties, required
