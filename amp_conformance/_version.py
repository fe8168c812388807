"""The package's version: the installed distribution's, which hatch-vcs derives from the git tags at
build time (no file carries it). Nothing is written into the source tree, so a build never leaves the
tree disagreeing with the installed metadata; a tree imported without being installed is 0+unknown."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("amp-conformance")
except PackageNotFoundError:  # a source tree on the path, never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
