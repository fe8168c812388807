"""A package whose lazy ``__getattr__`` imports a module with a syntax error (as a broken mutant of
``reference_server`` does): ``--app tests.ci.lazyapp:app`` must be one line and exit 2."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "app":  # what importing a module with a syntax error raises
        compile("app = (", "tests/ci/lazyapp/_broken.py", "exec")
    raise AttributeError(name)
