"""How a recorded request is replayed outside the suite: secrets as shell variables, bodies byte-exact.

A curl line must send exactly what the suite sent. Only the run's real secrets (the admin token, the
API keys it was given) are replaced, each by its own environment variable, found by *value* wherever
they occur; a wrong or case-flipped token a check sends on purpose is not a secret and is printed as
sent. A body that is not short printable text is rebuilt by a ``python3 -c`` generator piped into
curl (repeated runs such as ``"a" * 70000`` become ``b"a"*70000``), so the line is complete and
self-contained; only a large body with no such structure is written to a file next to the JSON
report, which the line then names.

Variable names: ``AMP_ADMIN_TOKEN`` for the admin token; ``AMP_API_KEY_<AGENT>`` for the key of an
agent, ``<AGENT>`` being the agent id upper-cased with every run of other characters than letters
and digits turned into ``_`` (``amp-keyed-agent-1`` -> ``AMP_API_KEY_AMP_KEYED_AGENT_1``); agents
whose ids give the same name get ``_2``, ``_3``... in id order.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ADMIN_TOKEN_VARIABLE = "AMP_ADMIN_TOKEN"
KEY_VARIABLE_PREFIX = "AMP_API_KEY_"
MASK = "***"
#: Secrets at least this long are also found inside longer values (a token with a suffix, a body).
#: Shorter ones are masked only where they are a whole header value: searching text for a
#: two-character key would mangle evidence without protecting anything.
MIN_EMBEDDED_SECRET = 6
#: Bodies up to this size that are printable UTF-8 text are written into the line as they are.
INLINE_BODY_BYTES = 4096
#: A generator longer than this is replaced by a body file when the run has a place for one.
GENERATOR_CHARS = 4096
#: A repeated unit is written as ``unit*count`` once its run is at least this long.
MIN_RUN_BYTES = 48
_RUN = re.compile(rb"(.{1,16}?)\1{2,}", re.DOTALL)
_VARIABLE_USE = re.compile(r"\$\{(AMP_[A-Z0-9_]+)\}")


def key_variable(agent_id: str) -> str:
    """``AMP_API_KEY_<AGENT>`` for an agent id (collisions are resolved by :class:`SecretRegistry`)."""
    stem = re.sub(r"[^A-Z0-9]+", "_", agent_id.upper()).strip("_")
    return KEY_VARIABLE_PREFIX + (stem or "AGENT")


@dataclass(frozen=True)
class Secret:
    value: str
    variable: str
    description: str


class SecretRegistry:
    """The run's real secrets by value, each with the variable a curl line uses instead."""

    def __init__(self) -> None:
        self._by_value: dict[str, Secret] = {}
        self._sorted: list[Secret] = []
        self._sorted_for = 0
        self._variables: set[str] = set()

    @classmethod
    def for_run(cls, admin_token: str | None, api_keys: Mapping[str, str]) -> SecretRegistry:
        registry = cls()
        if admin_token:
            registry.add(admin_token, ADMIN_TOKEN_VARIABLE, "the admin token given with --admin-token")
        for agent_id in sorted(api_keys):
            registry.add(api_keys[agent_id], key_variable(agent_id), f"the API key of agent {agent_id}")
        return registry

    def add(self, value: str, variable: str, description: str) -> Secret:
        """Register ``value``; a value registered twice keeps its first variable."""
        if value in self._by_value:
            return self._by_value[value]
        name, n = variable, 1
        while name in self._variables:
            n += 1
            name = f"{variable}_{n}"
        self._variables.add(name)
        secret = Secret(value, name, description)
        self._by_value[value] = secret
        return secret

    def __bool__(self) -> bool:
        return bool(self._by_value)

    def variables(self) -> dict[str, str]:
        """Variable -> what it holds (never the value), for the report and the summary."""
        return {s.variable: s.description for s in self._by_value.values()}

    def environment(self) -> dict[str, str]:
        """Variable -> secret: what a replay of the run's curl lines exports (never printed)."""
        return {s.variable: s.value for s in self._by_value.values()}

    def split(self, text: str, *, whole: bool = False) -> list[str | Secret]:
        """``text`` cut into plain pieces and the secrets in it (longest secret first).

        ``whole``: ``text`` is a complete value (a header value), so a short secret counts too."""
        exact = self._by_value.get(text)
        if exact is not None and whole:
            return [exact]
        pieces: list[str | Secret] = [text]
        embedded = [s for s in self._embeddable() if s.value in text]
        for secret in embedded:
            next_pieces: list[str | Secret] = []
            for piece in pieces:
                if isinstance(piece, Secret) or secret.value not in piece:
                    next_pieces.append(piece)
                    continue
                parts = piece.split(secret.value)
                for index, part in enumerate(parts):
                    if index:
                        next_pieces.append(secret)
                    if part:
                        next_pieces.append(part)
            pieces = next_pieces
        return pieces

    def _embeddable(self) -> list[Secret]:
        """The secrets long enough to be found inside a text, longest first (sorted once per set of
        secrets: a report masks every header and body of every exchange)."""
        if self._sorted_for != len(self._by_value):
            self._sorted = sorted(
                (s for s in self._by_value.values() if len(s.value) >= MIN_EMBEDDED_SECRET),
                key=lambda s: -len(s.value),
            )
            self._sorted_for = len(self._by_value)
        return self._sorted

    def mask(self, text: str, *, whole: bool = False) -> str:
        """``text`` with every secret replaced by ``***``."""
        if not self._by_value:
            return text
        return "".join(MASK if isinstance(p, Secret) else p for p in self.split(text, whole=whole))

    def export_hints(self, lines: Iterable[str]) -> list[str]:
        """``export VAR=...`` lines for the variables the given curl lines use, each saying what it
        holds (never the value), in order of first use. For the summary, next to a curl line."""
        described = self.variables()
        seen: list[str] = []
        for line in lines:
            seen += [name for name in curl_variables(line) if name not in seen]
        return [f"export {name}=...  ({described.get(name, 'a secret of this run')})" for name in seen]


@dataclass
class ReplayContext:
    """What a run's curl lines need beyond the exchange: its secrets and where large bodies go."""

    secrets: SecretRegistry = field(default_factory=SecretRegistry)
    body_dir: Path | None = None
    """Folder for bodies too large for a line (next to the JSON report), or None: always a generator."""

    @classmethod
    def for_run(
        cls, admin_token: str | None, api_keys: Mapping[str, str], json_path: Path | None
    ) -> ReplayContext:
        body_dir = None
        if json_path is not None and str(json_path) != "-":
            body_dir = json_path.parent.absolute() / f"{json_path.stem}.bodies"
        return cls(SecretRegistry.for_run(admin_token, api_keys), body_dir)


# shell words ---------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """One shell word for ``text``: single quotes for printable text, ``$'...'`` otherwise."""
    if text.isprintable():
        return shlex.quote(text)
    out = []
    for byte in text.encode("utf-8", errors="surrogateescape"):
        char = chr(byte)
        if char in "\\'":
            out.append("\\" + char)
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\x{byte:02x}")
    return "$'" + "".join(out) + "'"


def shell_word(text: str, secrets: SecretRegistry | None, *, whole: bool = False) -> str:
    """``text`` as one shell word, each secret in it spelt ``"${VARIABLE}"``."""
    if not secrets:
        return _quote(text)
    words = []
    for piece in secrets.split(text, whole=whole):
        words.append(f'"${{{piece.variable}}}"' if isinstance(piece, Secret) else _quote(piece))
    return "".join(words) or "''"


def header_word(name: str, value: str, secrets: SecretRegistry | None) -> str:
    """The ``-H`` argument for a header. curl drops ``Name:`` (empty value); ``Name;`` sends it empty."""
    if value == "":
        return _quote(f"{name};")
    if not secrets or not any(isinstance(p, Secret) for p in secrets.split(value, whole=True)):
        return _quote(f"{name}: {value}")
    return _quote(f"{name}: ") + shell_word(value, secrets, whole=True)


# bodies ----------------------------------------------------------------------------------------


def segments(data: bytes, min_run: int = MIN_RUN_BYTES) -> list[tuple[bytes, int]]:
    """``data`` as ``(unit, count)`` pieces: runs of a repeated unit (up to 16 bytes) of at least
    ``min_run`` bytes, and literal stretches (count 1) between them."""
    if len(data) > 4 * min_run and len(zlib.compress(data, 1)) > len(data) * 0.9:
        return [(data, 1)]  # no repetition worth looking for (and the search is slow on such bytes)
    out: list[tuple[bytes, int]] = []
    position = 0
    for match in _RUN.finditer(data):
        unit = match.group(1)
        length = len(match.group(0))
        if length < min_run:
            continue
        if match.start() > position:
            out.append((data[position : match.start()], 1))
        out.append((unit, length // len(unit)))
        position = match.start() + length
    if position < len(data):
        out.append((data[position:], 1))
    return out


def _literal_char(byte: int) -> str:
    char = chr(byte)
    if char in '"\\':
        return "\\" + char
    if 0x20 <= byte < 0x7F and char != "'":
        return char
    return f"\\x{byte:02x}"


_LITERAL = tuple(_literal_char(byte) for byte in range(256))


def bytes_literal(data: bytes) -> str:
    """A Python bytes literal in double quotes with no single quote in it (so the generator fits in
    one single-quoted shell word)."""
    return 'b"' + "".join(_LITERAL[byte] for byte in data) + '"'


def _generator_expression(data: bytes, secrets: SecretRegistry | None) -> tuple[str, bool]:
    """A Python expression that evaluates to ``data``; True when it reads secrets from the environment."""
    terms: list[str] = []
    uses_environment = False
    pieces: list[str | Secret | bytes] = [data]
    if secrets:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            pieces = [p if isinstance(p, Secret) else p.encode("utf-8") for p in secrets.split(text)]
    for piece in pieces:
        if isinstance(piece, Secret):
            terms.append(f'os.environ["{piece.variable}"].encode()')
            uses_environment = True
        elif isinstance(piece, bytes):
            for unit, count in segments(piece):
                literal = bytes_literal(unit)
                terms.append(literal if count == 1 else f"{literal}*{count}")
    return "+".join(terms) or "b''", uses_environment


def body_arguments(
    data: bytes, secrets: SecretRegistry | None, body_dir: Path | None
) -> tuple[str, list[str]]:
    """``(prefix, curl arguments)`` that send exactly ``data``; ``prefix`` is a generator pipe or ''."""
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and len(data) <= INLINE_BODY_BYTES and (text == "" or text.isprintable()):
        return "", ["--data-binary", shell_word(text, secrets) if text else "''"]
    expression, uses_environment = _generator_expression(data, secrets)
    if len(expression) > GENERATOR_CHARS and body_dir is not None and not uses_environment:
        path = _write_body(data, body_dir)
        if path is not None:
            return "", ["--data-binary", _quote(f"@{path}")]
    imports = "import os,sys" if uses_environment else "import sys"
    code = f"{imports};sys.stdout.buffer.write({expression})"
    return f"python3 -c {shlex.quote(code)} | ", ["--data-binary", "@-"]


def _write_body(data: bytes, body_dir: Path) -> Path | None:
    path = body_dir / f"{hashlib.sha256(data).hexdigest()[:20]}.bin"
    try:
        body_dir.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_bytes(data)
    except OSError:
        return None
    return path


def display_body(data: bytes, limit: int) -> str:
    """A body for people: long repeated runs shown once with their count, then cut at ``limit``
    characters; every cut is stated. Bytes that are not UTF-8 show as ``\\xNN``."""
    parts: list[str] = []
    for unit, count in segments(data, min_run=64):
        shown = unit.decode("utf-8", errors="backslashreplace")
        if count == 1:
            parts.append(shown)
        else:
            parts.append(f"{shown * max(1, 16 // max(1, len(unit)))}[... {shown!r} x {count} in all, cut]")
    text = "".join(parts)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text) - limit} more characters]"


def curl_variables(line: str) -> list[str]:
    """The ``${AMP_...}`` variables a curl line reads, in order of first use."""
    seen: list[str] = []
    for name in _VARIABLE_USE.findall(line):
        if name not in seen:
            seen.append(name)
    return seen


def export_hints(replay: ReplayContext | None, lines: Iterable[str]) -> list[str]:
    """The ``export VAR=...`` lines a reader needs before running ``lines`` (a run's curl lines), each
    saying what the variable holds and never its value; [] for a run without secrets. For the summary
    (``export_hints(run.connection.replay, [line])``)."""
    return replay.secrets.export_hints(lines) if replay is not None else []
