"""The package's version, from git tags alone: hatch-vcs writes ``_vcs_version.py`` (ignored by git) at
build and install time; a tree imported without being installed falls back to the installed metadata."""

from __future__ import annotations

import importlib

try:  # imported by name: the file exists only once built, and mypy needs no stub for it
    __version__: str = importlib.import_module("amp_conformance._vcs_version").__version__
except ImportError:  # not built here (a source tree on the path, an install made before hatch-vcs)
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("amp-conformance")
    except PackageNotFoundError:
        __version__ = "0+unknown"

__all__ = ["__version__"]
