"""Optional API keys: the key file, digest checks in constant time, and the ``hash`` helper.

The file maps agent id -> ``sha256:<hex>`` of the agent's key, so a leaked file hands over no working
credential. Every failure answers the same 401 so the endpoint cannot be used to enumerate agent ids.

    python -m reference_server.amp01.auth hash 'the-agent-key'    # prints sha256:<hex>
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sys
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from reference_server.amp01.config_error import ConfigError

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# Compared against when the agent is unknown, so an unknown agent costs the same time as a wrong key.
_DUMMY_DIGEST = "sha256:" + "0" * 64


def hash_key(key: str) -> str:
    """The digest to store for ``key`` (UTF-8)."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def validate_keys(keys: Mapping[str, str], *, source: str) -> Mapping[str, str]:
    """Check every entry is ``agent id -> sha256:<64 hex>``; returns a read-only copy."""
    checked: dict[str, str] = {}
    for agent, digest in keys.items():
        if not isinstance(agent, str) or not agent:
            raise ConfigError(f"{source}: agent ids must be non-empty strings")
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest.strip().lower()):
            raise ConfigError(f"{source}: the value for agent {agent!r} is not 'sha256:<64 hex digits>'")
        checked[agent] = digest.strip().lower()
    return MappingProxyType(checked)


def load_keys_file(path: str) -> Mapping[str, str]:
    """Read ``AMP_API_KEYS_FILE``; anything unreadable or malformed raises ``ConfigError``."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"AMP_API_KEYS_FILE {path!r} cannot be read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"AMP_API_KEYS_FILE {path!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"AMP_API_KEYS_FILE {path!r} must hold a JSON object of agent id -> 'sha256:<hex>'")
    return validate_keys(data, source=f"AMP_API_KEYS_FILE {path!r}")


class KeyRing:
    """The configured agents and their digests; ``verify`` never short-circuits on an unknown agent."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._keys = dict(keys)

    def knows(self, agent: str) -> bool:
        return agent in self._keys

    def verify(self, agent: str | None, key: str | None) -> bool:
        """Whether ``key`` is the registered key of ``agent`` (constant time in the key and the digest)."""
        expected = self._keys.get(agent, _DUMMY_DIGEST) if agent else _DUMMY_DIGEST
        offered = hash_key(key) if key is not None else _DUMMY_DIGEST
        match = hmac.compare_digest(offered.encode("ascii"), expected.encode("ascii"))
        return match and bool(agent) and key is not None and agent in self._keys


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m reference_server.amp01.auth hash KEY``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "hash":
        print("usage: python -m reference_server.amp01.auth hash KEY", file=sys.stderr)
        return 2
    print(hash_key(args[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
