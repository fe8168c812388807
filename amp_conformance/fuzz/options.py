"""The fuzz area's options (``--no-fuzz``, ``--openapi``, ``--fuzz-examples``, ``--fuzz-seconds``),
declared here, by what reads them, and checked before a run starts. The engine adds them to the
command's and the plugin's options and copies them into ``SuiteOptions``' fuzz fields."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from amp_conformance.engine.options import OptionSpec, OptionValues, UsageError

NO_FUZZ = OptionSpec("no-fuzz", "do not run the fuzz area", {"action": "store_true", "default": False})
OPENAPI = OptionSpec("openapi", "contract (path or URL) the fuzz area loads; default: the bundled one")
FUZZ_EXAMPLES = OptionSpec(
    "fuzz-examples", "examples per operation and phase (default 25)", {"type": int, "default": 25}
)
FUZZ_SECONDS = OptionSpec(
    "fuzz-seconds", "time budget of the fuzz area (default 45)", {"type": float, "default": 45.0}
)
FUZZ_OPTIONS: tuple[OptionSpec, ...] = (NO_FUZZ, OPENAPI, FUZZ_EXAMPLES, FUZZ_SECONDS)


@dataclass(frozen=True)
class FuzzSettings:
    fuzz: bool
    openapi: str | None
    fuzz_examples: int
    fuzz_seconds: float


def fuzz_settings(values: OptionValues) -> FuzzSettings:
    """``SuiteOptions``' fuzz fields from the option values (UsageError for unusable ones; a
    contract URL is checked where every URL is, ``engine.configuration.check_url``)."""
    given_examples = values.get(FUZZ_EXAMPLES.name)
    given_seconds = values.get(FUZZ_SECONDS.name)
    examples = 25 if given_examples is None else int(str(given_examples))
    seconds = 45.0 if given_seconds is None else float(str(given_seconds))
    if examples < 1:
        raise UsageError(f"--fuzz-examples must be at least 1, not {examples!r}")
    if seconds <= 0:
        raise UsageError(f"--fuzz-seconds must be positive, not {seconds!r}")
    openapi = values.text(OPENAPI.name)
    if openapi and "://" not in openapi and not Path(openapi).is_file():
        raise UsageError(f"--openapi {openapi}: no such file")
    return FuzzSettings(not values.flag(NO_FUZZ.name), openapi, examples, seconds)
