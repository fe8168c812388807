"""Find secrets in a line of text (AMR-LITE-15) and mask them for reports.

The patterns are detect-secrets' regex detectors (a maintained set: AWS, GitHub, GitLab, Slack,
Stripe, JWT, private keys, passwords in URLs, npm, PyPI, SendGrid, Twilio, ...; its public-IP
detector is left out, an address is not a secret), plus a few it lacks, documented in
``EXTRA_PATTERNS``. A cheap candidate test runs first, so a line with no long token, URL
credential, key header or ``password=``-style assignment costs one regex search: every detector
needs one of those to match.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache
from typing import Final

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.ip_public import IPPublicDetector

#: Patterns detect-secrets lacks, each ``(kind, regex)``; group 1, when present, is the secret.
EXTRA_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    # OpenAI (sk-proj-…, sk-svcacct-…), Anthropic (sk-ant-…) and other "sk-" secret keys; detect-secrets
    # knows only the legacy OpenAI form with the T3BlbkFJ marker.
    ("sk- API key", re.compile(r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_-]{20,})")),
    ("Google API key", re.compile(r"(?<![A-Za-z0-9])(AIza[0-9A-Za-z_-]{35})")),
    ("Bearer token", re.compile(r"(?i:\bbearer)\s+([A-Za-z0-9._~+/-]{20,}=*)")),
    # `password = hunter22`, `Password: correcthorsebatterystaple`: a credential word labelling a value
    # of 8+ characters with a letter. A labelled secret is a secret, digits or not; only prose after
    # the label ("token: see the vault", "Password: unchanged since May") and references
    # (`${DB_PASSWORD}`, `<redacted>`) are not: see ``_is_labelled_secret``.
    (
        "credential assignment",
        re.compile(
            r"(?i)\b(?:password|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|token)\s*[:=]\s*[\"']?([^\s\"'`]{8,})"
        ),
    ),
)
_LETTER_AND_DIGIT = re.compile(r"(?=.*[A-Za-z])(?=.*\d)")
#: Words that stand where a value would, saying there is none here (compared lower-cased, trimmed).
_NOT_A_VALUE: Final = frozenset(
    [
        "none",
        "null",
        "nil",
        "empty",
        "unset",
        "redacted",
        "removed",
        "hidden",
        "masked",
        "omitted",
        "unknown",
        "required",
        "optional",
        "placeholder",
        "unchanged",
        "available",
        "provided",
        "elsewhere",
        "rotated",
        "stored",
        "example",
    ]
)
#: A reference to a secret kept elsewhere: ``$VAR``, ``${VAR}``, ``%VAR%``, ``<...>``, ``{{...}}``,
#: ``env:NAME``, ``vault:path``, ``op://...``; also an ALL_CAPS variable name.
_REFERENCE = re.compile(r"[$%<{\[(*]|[a-z][a-z0-9+.-]*:|[A-Z][A-Z0-9_]*\Z")
#: After the value: more words of a sentence (the label was prose), not the end of the clause.
_PROSE_AFTER = re.compile(r"[ \t]+[A-Za-z]")
_WORD_VALUE = re.compile(r"[a-z][a-z-]*[a-z]\Z|[A-Z][a-z-]*[a-z]\Z")
# The candidate test. Every detector needs one of: a run of 20+ token characters (keys, tokens,
# JWT parts, long hex), a run of 11+ holding an Artifactory prefix, one of these literals (URL
# credentials, key headers, npm/Slack/Azure markers), or a credential word before `:`/`=`.
_RUN_CHARACTERS: Final = frozenset(string.ascii_letters.encode() + string.digits.encode() + b"_-+/=")
#: Byte table: a token character becomes ``a``, anything else a space; runs are then found with ``in``.
_RUN_TABLE: Final = bytes(0x61 if byte in _RUN_CHARACTERS else 0x20 for byte in range(256))
_RUN_20: Final = b"a" * 20
_RUN_11: Final = b"a" * 11
#: Run on the lower-cased text: a case-blind alternation is far slower.
_KEYWORD_ASSIGNMENT: Final = re.compile(r"(?:password|passwd|passphrase|pwd|secret|api[_-]?key|token)\s*[:=]")


def _is_candidate(text: str) -> bool:
    """Cheap necessary condition for any pattern to match (see the comment above).

    Only ``in`` tests and a byte translation: a regex trying each position costs four times more,
    a case-blind alternation forty.
    """
    if (
        "://" in text
        or "PRIVATE KEY" in text
        or "PuTTY-User" in text
        or ":_authToken" in text
        or "xox" in text
        or "AccountKey=" in text
        or "eyJ" in text
    ):
        return True
    runs = text.encode("utf-8", "replace").translate(_RUN_TABLE)
    if _RUN_20 in runs or (("AKC" in text or "AP" in text) and _RUN_11 in runs):
        return True
    lowered = text.lower()
    if "pass" in lowered or "pwd" in lowered or "secret" in lowered or "key" in lowered or "token" in lowered:
        return _KEYWORD_ASSIGNMENT.search(lowered) is not None
    return False


@dataclass(frozen=True, slots=True)
class Secret:
    """One secret: its kind and where it is in the text (0-based ``start``, exclusive ``end``)."""

    kind: str
    start: int
    end: int
    value: str

    @property
    def masked(self) -> str:
        return mask(self.value)


def mask(value: str) -> str:
    """Enough to recognise the kind of key, never enough to use it: ``sk-p****`` or ``****``."""
    return (value[:4] if len(value) >= 16 else "") + "****"


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Our extra patterns first (they name the kind more precisely), then detect-secrets' regexes."""
    found = list(EXTRA_PATTERNS)
    mapping: dict[str, type[object]] = dict(get_mapping_from_secret_type_to_class())
    for kind, cls in mapping.items():
        if issubclass(cls, RegexBasedDetector) and cls is not IPPublicDetector:
            found.extend((kind, pattern) for pattern in cls().denylist)
    return tuple(found)


def _is_labelled_secret(match: re.Match[str]) -> bool:
    """Whether the value after a credential label is a secret (the label's match, value in group 1).

    A value with a letter and a digit is (as it always was). Without a digit: a reference or a
    "no value here" word is not; a quoted value is; an unquoted one of letters (and hyphens) only is
    a secret when it ends its clause (``Password: correcthorsebatterystaple``, ``... (rotated
    monthly)``) or is too long to be a word (16+), and followed by more words it is a sentence
    (``Password: unchanged since May``); any other value (mixed case, symbols) is a secret.
    """
    if _LETTER_AND_DIGIT.match(match.group(1)):
        return True
    value = match.group(1).rstrip(".,;:!?)]")
    if len(value) < 8 or not any(c.isalpha() for c in value):
        return False
    if _REFERENCE.match(value) or value.lower() in _NOT_A_VALUE:
        return False
    if match.start(1) > 0 and match.string[match.start(1) - 1] in "\"'":
        return True  # quoted: a value, not words
    if _WORD_VALUE.match(value) is None or len(value) >= 16:
        return True  # mixed case, symbols, a 16-letter "word": not English prose
    return _PROSE_AFTER.match(match.string, match.start(1) + len(value)) is None


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The secret inside a match: group 1 when it is the value (8+ characters), else the whole match
    less the delimiters some detectors include."""
    if match.re.groups and match.group(1) and len(match.group(1)) >= 8:
        return match.span(1)
    start, end = match.span()
    text = match.string
    while start < end and text[start] in _DELIMITERS:
        start += 1
    while end > start and text[end - 1] in _DELIMITERS:
        end -= 1
    return start, end


_DELIMITERS: Final = frozenset(" \t\"'=:")


def find_secrets(text: str) -> list[Secret]:
    """Secrets in ``text``, in order; overlapping finds keep the longest (the first pattern on a tie)."""
    if not _is_candidate(text):
        return []
    found: list[Secret] = []
    for kind, pattern in _patterns():
        for match in pattern.finditer(text):
            start, end = _span(match)
            value = text[start:end]
            if kind == "credential assignment" and not _is_labelled_secret(match):
                continue
            if value:
                found.append(Secret(kind, start, end, value))
    return _longest_first(found)


def _longest_first(found: list[Secret]) -> list[Secret]:
    kept: list[Secret] = []
    for secret in sorted(found, key=lambda s: (-(s.end - s.start), s.start)):
        if all(secret.end <= other.start or secret.start >= other.end for other in kept):
            kept.append(secret)
    return sorted(kept, key=lambda s: s.start)


def mask_all(text: str, secrets: list[Secret] | None = None) -> str:
    """``text`` with every secret in it masked."""
    items = find_secrets(text) if secrets is None else secrets
    for secret in sorted(items, key=lambda s: s.start, reverse=True):
        text = text[: secret.start] + secret.masked + text[secret.end :]
    return text
