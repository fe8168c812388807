"""What the reference servers share about faults: a fault's record and the set switched on for a server.

Each protocol package lists its own faults (``reference_server/amp01/faults.py``,
``reference_server/amp11/faults.py``) and subclasses :class:`FaultSwitches` with that list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar, Self


@dataclass(frozen=True)
class Fault:
    """One deliberate bug: its kebab-case name, the catalogue id it breaks, and what it does."""

    name: str
    requirement: str
    description: str


class UnknownFaultError(ValueError):
    """A fault name the server does not know."""


class FaultSwitches:
    """The set of faults switched on for one server; ``on(name)`` is how the code asks.

    A subclass names the faults it knows (``known``) and the command that lists them (``listing``)."""

    known: ClassVar[Mapping[str, Fault]]
    listing: ClassVar[str]
    __slots__ = ("_names",)

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = frozenset(names)
        unknown = sorted(names - self.known.keys())
        if unknown:
            raise UnknownFaultError(f"unknown fault name(s): {', '.join(unknown)} (see {self.listing})")
        self._names = names

    @classmethod
    def parse(cls, value: str | None) -> Self:
        """Parse a comma-separated list of names (the servers' ``*_REFERENCE_FAULTS`` variables)."""
        if not value:
            return cls()
        return cls(part.strip() for part in value.split(",") if part.strip())

    def on(self, name: str) -> bool:
        """Whether the fault is switched on. An unknown name is a bug in the caller, not a config error."""
        if name not in self.known:
            raise KeyError(f"no fault named {name!r}")
        return name in self._names

    @property
    def names(self) -> frozenset[str]:
        return self._names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names))

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self._names)!r})"
