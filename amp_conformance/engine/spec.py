"""What the engine knows of one check: :class:`CheckSpec`, read from its ``@check`` mark."""

from __future__ import annotations

from dataclasses import dataclass

from amp_conformance.engine.vocabulary import Level


@dataclass(frozen=True)
class CheckSpec:
    """One check: the requirements it cites, its level and area, its title (the docstring's first
    line) and how it runs. ``nodeid`` is relative to its protocol's checks folder."""

    requirements: tuple[str, ...]
    level: Level
    area: str
    title: str
    name: str = ""
    nodeid: str = ""
    deadline: float | None = None
    global_effects: bool = False
    stance: str | None = None
    serial: bool = False
    scope: str | None = None
    """A work unit of its own within its module for a parallel run (a module split for speed; checks
    sharing a declared step are kept together by ``uses`` instead)."""
    uses: tuple[str, ...] = ()
    """The shared steps (``engine.steps.Step`` names) the check reads, kept in one work unit with it."""
    adopts: tuple[str, ...] = ()
    """Shared steps it reads that another unit's check makes (adopted from another worker)."""
    tiers: tuple[str, ...] = ()
    """The tier marks it carries (``smoke``, ``stress``: ``engine.tiers``); the registry reads them."""
