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
    """The work unit a parallel run keeps it in with the checks whose shared values it uses (by
    default its module)."""
