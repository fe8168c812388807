"""The secret finder behind AMR-LITE-15: each extra pattern, the detect-secrets families, masking."""

from __future__ import annotations

import pytest

from amp_conformance.validator.secrets import EXTRA_PATTERNS, find_secrets, mask, mask_all

EXTRA_CASES = {
    "sk- API key": (
        "OPENAI_API_KEY is sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
        "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
    ),
    "Google API key": (
        "maps key AIzaSyD4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbC in the app",
        "AIzaSyD4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbC",
    ),
    "Bearer token": ("send Authorization: Bearer 4fGh7Jk9Lm2Np5Qr8St1Uv3Wx", "4fGh7Jk9Lm2Np5Qr8St1Uv3Wx"),
    "credential assignment": ("staging password=Winter2026x for admin", "Winter2026x"),
}


def test_every_extra_pattern_has_a_case() -> None:
    assert set(EXTRA_CASES) == {kind for kind, _ in EXTRA_PATTERNS}


@pytest.mark.parametrize("kind", sorted(EXTRA_CASES))
def test_extra_pattern_finds_and_locates_its_secret(kind: str) -> None:
    text, secret = EXTRA_CASES[kind]
    [found] = find_secrets(text)
    assert (found.kind, found.value) == (kind, secret)
    assert text[found.start : found.end] == secret
    assert secret not in mask_all(text)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("key AKIAZ7Q3XK2LMN4PQR5S", "AWS Access Key"),
        ("token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "GitHub Token"),
        ("gitlab glpat-A1b2C3d4E5f6G7h8I9j0", "GitLab Token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "Private Key"),
        ("db https://app:Tr0ub4dor3x@db.example.net/x", "Basic Auth Credentials"),
        ("slack xoxb-123456789012-abcdefghijkl", "Slack Token"),
        ("stripe sk_live_4fGh7Jk9Lm2Np5Qr8St1Uv3W", "Stripe Access Key"),
    ],
)
def test_detect_secrets_families_are_used(text: str, kind: str) -> None:
    assert [s.kind for s in find_secrets(text)] == [kind]


@pytest.mark.parametrize(
    "text",
    [
        "Vendor docs state the API rate limit is 60 req/min (docs.example.com/limits)",
        "Password resets go through the admin panel; the token: see the team vault",
        "Tokens are rotated every 90 days by the platform team",
        "The public address of the proxy is 203.0.113.7",
        "Build output lives in src/amp_conformance/validator/",
        "Use https://docs.example.com/guide for the setup steps",
    ],
)
def test_ordinary_memory_text_has_no_secret(text: str) -> None:
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Password: correcthorsebatterystaple", "correcthorsebatterystaple"),
        ("staging passphrase = correcthorsebatterystaple", "correcthorsebatterystaple"),
        ("Password: correcthorsebatterystaple (rotated monthly)", "correcthorsebatterystaple"),
        ("the admin password: 'letmeinplease' for the demo box", "letmeinplease"),
        ("Password: CorrectHorse for the demo box", "CorrectHorse"),
        ("Password: correcthorsebatterystaple for the staging database", "correcthorsebatterystaple"),
        ("api_key: abcdefghijklmnop", "abcdefghijklmnop"),
    ],
)
def test_a_labelled_secret_is_a_secret_without_digits(text: str, secret: str) -> None:
    """Issue 22 §4: a value after a credential label is a secret, digits or not."""
    [found] = find_secrets(text)
    assert (found.kind, found.value) == ("credential assignment", secret)
    assert secret not in mask_all(text)


@pytest.mark.parametrize(
    "text",
    [
        "Password: unchanged since the migration",
        "Password: available from the ops team on request",
        "Password: see the team vault",
        "password: <redacted>",
        "password=${DB_PASSWORD} in the compose file",
        "Password: redacted",
        "password: ********",
        "token: rotated nightly by the platform job",
        "password: env:DB_PASSWORD",
    ],
)
def test_a_credential_label_before_prose_or_a_reference_is_no_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_mask_keeps_at_most_a_short_prefix_of_long_values() -> None:
    assert mask("sk-proj-4fGh7Jk9Lm2Np5Qr8St1") == "sk-p****"
    assert mask("hunter22") == "****"
