"""Requirement catalogues: every check cites ids from one, and reports show their level and title.

One model for every catalogue the project ships (AMP v0.1.0, AMP v1.1, the validator's AMR-lite and
MemoryCloud profiles): a :class:`Catalogue` of :class:`Requirement` rows read from a JSON file that
``contract/requirements.schema.json`` describes. The engine knows no catalogue by name: a protocol
package loads its own (:func:`load_catalogue`) and the registry finds an id's catalogue by its prefix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from amp_conformance.engine.vocabulary import LEVELS, Level

MUST, SHOULD, MAY = Level.MUST, Level.SHOULD, Level.MAY


def strongest_level(requirements: Iterable[Requirement | None]) -> Level | None:
    """The strongest level of the known requirements among ``requirements`` (None: none known)."""
    found = [r.level for r in requirements if r is not None]
    return min(found, key=LEVELS.index) if found else None


@dataclass(frozen=True)
class Requirement:
    """One numbered requirement. ``area`` is the id's second part (``AMP-READ-02`` -> ``read``);
    the optional fields are what some catalogues add (tiers and channels of AMP v1.1, the quoted source
    lines of a validator profile)."""

    id: str
    level: Level
    title: str
    tier: str | None = None
    source: str | None = None
    channels: tuple[str, ...] = ()
    verified: str | None = None
    lines: tuple[int, ...] = ()
    quote: str | None = None
    checkable: bool = True
    why_not: str | None = None

    @property
    def area(self) -> str:
        return area_of(self.id)

    def as_dict(self) -> dict[str, str]:
        """The fields a report's catalogue block carries."""
        entry = {"id": self.id, "level": str(self.level), "title": self.title, "area": self.area}
        if self.tier is not None:
            entry["tier"] = self.tier
        return entry

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Requirement:
        return cls(
            id=raw["id"],
            level=Level(raw["level"]),
            title=raw["title"],
            tier=raw.get("tier"),
            source=raw.get("source"),
            channels=tuple(raw.get("channels") or ()),
            verified=raw.get("verified"),
            lines=tuple(raw.get("lines") or ()),
            quote=raw.get("quote"),
            checkable=bool(raw.get("checkable", True)),
            why_not=raw.get("why_not"),
        )


@dataclass(frozen=True)
class Catalogue:
    """A protocol's (or profile's) requirements by id, in catalogue order, with its area names and the
    friendly area names ``--only`` also accepts."""

    name: str
    title: str
    prefix: str
    requirements: Mapping[str, Requirement]
    areas: Mapping[str, str] = field(default_factory=dict)
    aliases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    document: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The whole parsed file (conflicts, sources, tiers...), read-only."""

    def get(self, requirement_id: str) -> Requirement | None:
        return self.requirements.get(requirement_id)

    def level_of(self, requirement_ids: Iterable[str], default: str = Level.MAY) -> str:
        """The strongest level among ``requirement_ids`` in this catalogue (``default`` when none is
        known)."""
        return strongest_level(self.requirements.get(rid) for rid in requirement_ids) or default

    def __contains__(self, requirement_id: object) -> bool:
        return requirement_id in self.requirements

    def expand_areas(self, names: str | Iterable[str]) -> set[str]:
        """``--only`` text (``"acl,crud"``) as area codes; an unknown name raises ValueError."""
        items = names.split(",") if isinstance(names, str) else list(names)
        result: set[str] = set()
        for raw in items:
            name = raw.strip().lower()
            if not name:
                continue
            if name in self.areas:
                result.add(name)
            elif name in self.aliases:
                result.update(self.aliases[name])
            else:
                known = ", ".join([*self.areas, *self.aliases])
                raise ValueError(f"unknown area {raw!r}; known areas: {known}")
        return result

    def as_report(self) -> dict[str, Any]:
        """The report's ``catalogue`` block."""
        return {
            "protocol": self.name,
            "areas": dict(self.areas),
            "requirements": [r.as_dict() for r in self.requirements.values()],
        }


def area_of(requirement_id: str) -> str:
    """``AMP-READ-02`` -> ``read``."""
    return requirement_id.split("-")[1].lower()


def catalogue_from_document(document: Mapping[str, Any]) -> Catalogue:
    """A :class:`Catalogue` from a parsed catalogue file (the shape ``requirements.schema.json`` gives)."""
    rows = document.get("requirements")
    if rows is None:
        rows = document["rules"]  # a validator profile calls its requirements rules
    requirements = {raw["id"]: Requirement.from_json(raw) for raw in rows}
    aliases = {name: tuple(codes) for name, codes in (document.get("area_aliases") or {}).items()}
    return Catalogue(
        name=str(document.get("protocol") or document.get("profile") or ""),
        title=str(document.get("title") or ""),
        prefix=str(document.get("prefix") or ""),
        requirements=requirements,
        areas=dict(document.get("areas") or {}),
        aliases=aliases,
        document=document,
    )


def load_catalogue(package: str, resource: str = "contract/requirements.json") -> Catalogue:
    """The catalogue file ``resource`` shipped in ``package`` (a protocol package's dotted name)."""
    path = resources.files(package).joinpath(*resource.split("/"))
    return catalogue_from_document(json.loads(path.read_text(encoding="utf-8")))


def levels_up_to(level: str) -> set[str]:
    """``--level SHOULD`` runs MUST and SHOULD checks."""
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use MUST, SHOULD or MAY")
    return set(LEVELS[: LEVELS.index(Level(level)) + 1])
