"""The registry: protocols found by entry point, and the checks each protocol's package declares.

Protocols are found the way pytest finds plugins: every entry point in the ``amp_conformance.protocols``
group names a :class:`~amp_conformance.engine.protocol.Protocol` instance. :data:`DEFAULT_PROTOCOLS`
is the fallback for a tree that is not installed (no package metadata); an installed third-party
protocol needs no edit here. Checks are read from their modules' ``@check`` marks without a pytest
collection (``check_registry.checks_of``: ``--list``, coverage and the parallel scheduler use it).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from functools import cache
from importlib.metadata import entry_points

from amp_conformance.engine.catalogue import Catalogue, Requirement, strongest_level
from amp_conformance.engine.protocol import AnyProtocol, Protocol
from amp_conformance.engine.vocabulary import Level

GROUP = "amp_conformance.protocols"
#: The protocols this distribution ships, by name (used when its entry points cannot be read).
DEFAULT_PROTOCOLS = {
    "amp-0.1": "amp_conformance.amp01.protocol:PROTOCOL",
    "amp-1.1": "amp_conformance.amp11.protocol:PROTOCOL",
}
DEFAULT_PROTOCOL = "amp-0.1"


def _load(reference: str) -> AnyProtocol:
    module_name, _, attribute = reference.partition(":")
    found = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(found, Protocol):
        raise TypeError(f"{reference} is not an amp_conformance Protocol")
    return found


@cache
def _references() -> dict[str, str]:
    references = dict(DEFAULT_PROTOCOLS)
    for point in entry_points(group=GROUP):
        references[point.name] = point.value
    return references


def names() -> list[str]:
    """Every registered protocol's name (the built-in ones first)."""
    return list(_references())


@cache
def get(name: str) -> AnyProtocol:
    """The protocol called ``name``; KeyError (naming the known ones) for any other."""
    references = _references()
    if name not in references:
        raise KeyError(f"unknown protocol {name!r}; known protocols: {', '.join(references)}")
    protocol = _load(references[name])
    if protocol.name != name:
        raise TypeError(f"the protocol registered as {name!r} calls itself {protocol.name!r}")
    return protocol


def protocols() -> list[AnyProtocol]:
    """Every registered protocol, loaded."""
    return [get(name) for name in names()]


def catalogue_of(requirement_id: str) -> Catalogue | None:
    """The catalogue holding ``requirement_id``: the registered protocol with the longest matching
    id prefix (``AMP11-`` before ``AMP-``)."""
    best: Catalogue | None = None
    for protocol in protocols():
        found = protocol.catalogue
        if requirement_id.startswith(found.prefix) and (best is None or len(found.prefix) > len(best.prefix)):
            best = found
    return best


def requirement(requirement_id: str) -> Requirement | None:
    """The catalogue entry of any registered protocol's id, or None for an id no catalogue has."""
    found = catalogue_of(requirement_id)
    return found.get(requirement_id) if found is not None else None


def level_of(requirement_ids: Iterable[str], default: str = Level.MAY) -> str:
    """The strongest catalogue level among ``requirement_ids`` (``default`` when none is known)."""
    return strongest_level(requirement(rid) for rid in requirement_ids) or default
