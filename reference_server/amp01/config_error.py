"""The start-up error, in a module of its own so that settings and key loading can both raise it."""

from __future__ import annotations


class ConfigError(Exception):
    """A setting that cannot be honoured; start-up must stop rather than run with something else."""
