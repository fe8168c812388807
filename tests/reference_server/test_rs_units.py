"""Unit checks of the building blocks: settings, clock, timestamps, ids, embedding and index."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from reference_server import ConfigError, ManualClock, Settings, SystemClock
from reference_server.amp01.embedding import BLOCK, DIMENSIONS, VectorIndex, embed, similarity
from reference_server.amp01.faults import Faults
from reference_server.amp01.ids import IdGenerator
from reference_server.amp01.timestamps import format_timestamp, parse_rfc3339


def test_settings_defaults_and_env():
    settings = Settings.from_env({})
    assert settings == Settings()
    assert (settings.convention, settings.id_form, settings.scoring_patch_limit) == (
        "reference",
        "prefixed",
        5,
    )
    assert (settings.scoring_patch_window_seconds, settings.max_cell_size_bytes) == (3600, 65536)
    assert (settings.lifecycle_enabled, settings.lifecycle_interval_seconds) == (True, 3600)
    assert (
        settings.purge_retention is False and settings.admin_token is None and not settings.api_keys_required
    )
    env = {
        "AMP_REFERENCE_CONVENTION": "upstream",
        "AMP_REFERENCE_ID_FORM": "bare",
        "AMP_ADMIN_TOKEN": "tok",
        "AMP_SCORING_PATCH_LIMIT": "0",
        "AMP_SCORING_PATCH_WINDOW_SECONDS": "5",
        "AMP_MAX_CELL_SIZE_BYTES": "1000",
        "AMP_LIFECYCLE_ENABLED": "false",
        "AMP_LIFECYCLE_INTERVAL_SECONDS": "10",
        "AMP_PURGE_RETENTION": "1",
    }
    settings = Settings.from_env(env)
    assert settings.convention == "upstream" and settings.id_form == "bare" and settings.admin_token == "tok"
    assert settings.scoring_patch_limit == 0 and settings.scoring_patch_window_seconds == 5
    assert settings.max_cell_size_bytes == 1000 and settings.lifecycle_enabled is False
    assert settings.lifecycle_interval_seconds == 10 and settings.purge_retention is True


@pytest.mark.parametrize(
    "env",
    [
        {"AMP_REFERENCE_ID_FORM": "short"},
        {"AMP_SCORING_PATCH_LIMIT": "-1"},
        {"AMP_SCORING_PATCH_WINDOW_SECONDS": "0"},
        {"AMP_MAX_CELL_SIZE_BYTES": "big"},
        {"AMP_LIFECYCLE_INTERVAL_SECONDS": "0"},
        {"AMP_PURGE_RETENTION": "sometimes"},
        {"AMP_REFERENCE_FAULTS": "limit-clamped,typo"},
    ],
)
def test_settings_refuse_bad_values(env):
    with pytest.raises(ConfigError):
        Settings.from_env(env)


def test_settings_constructor_validates():
    with pytest.raises(ConfigError):
        Settings(faults=frozenset({"nope"}))
    with pytest.raises(ConfigError):
        Settings(convention="other")  # type: ignore[arg-type]


def test_faults_object():
    faults = Faults(["limit-clamped"])
    assert faults.on("limit-clamped") and not faults.on("rate-limit-off")
    with pytest.raises(KeyError):
        faults.on("not-a-fault")
    assert Faults.parse(None).names == frozenset()


def test_clocks():
    now = SystemClock().now()
    assert now.tzinfo is not None and abs((datetime.now(UTC) - now).total_seconds()) < 5
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=2))))
    assert clock.now() == datetime(2025, 12, 31, 22, tzinfo=UTC)
    clock.advance(timedelta(days=1))
    clock.advance(30)
    assert clock.now() == datetime(2026, 1, 1, 22, 0, 30, tzinfo=UTC)
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    assert clock.now().year == 2030
    with pytest.raises(ValueError):
        ManualClock(datetime(2026, 1, 1))


def test_timestamp_format_is_fixed_width():
    assert format_timestamp(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05.000000Z"
    assert format_timestamp(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01T00:00:00.000000Z"
    assert (
        format_timestamp(datetime(2026, 1, 1, tzinfo=UTC), local_offset=True)
        == "2026-01-01T02:00:00.000000+02:00"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2030-01-01T00:00:00Z", datetime(2030, 1, 1, tzinfo=UTC)),
        ("2030-01-01t00:00:00z", datetime(2030, 1, 1, tzinfo=UTC)),
        ("2030-01-01T02:30:00+02:30", datetime(2030, 1, 1, tzinfo=UTC)),
        ("2029-12-31T23:00:00-01:00", datetime(2030, 1, 1, tzinfo=UTC)),
        ("2030-01-01T00:00:00.1234567Z", datetime(2030, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
        ("2016-12-31T23:59:60Z", datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        ("0000-02-29T00:00:00Z", datetime.min.replace(tzinfo=UTC)),
    ],
)
def test_rfc3339_parsing(text, expected):
    assert parse_rfc3339(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2030-01-01",
        "2030-01-01 00:00:00Z",
        "2030-01-01T00:00:00",
        "2030-13-01T00:00:00Z",
        "2030-02-29T00:00:00Z",
        "2030-01-01T24:00:00Z",
        "2030-01-01T00:60:00Z",
        "2030-01-01T00:00:61Z",
        "2030-01-01T00:00:00+24:00",
        "2030-01-01T00:00:00+01:60",
        "2030-01-01T00:00:00.Z",
        "２０３０-01-01T00:00:00Z",
        "",
    ],
)
def test_rfc3339_refusals(text):
    with pytest.raises(ValueError):
        parse_rfc3339(text)


def test_id_generator_is_monotonic_within_a_millisecond():
    clock = ManualClock()
    ids = IdGenerator(clock)
    made = [ids.new() for _ in range(1000)]
    assert made == sorted(made) and len(set(made)) == 1000
    assert all(i.startswith("mem_") and len(i) == 30 for i in made)
    assert len(IdGenerator(clock, prefixed=False).new()) == 26


def test_embedding_is_deterministic_and_normalised():
    first, second = embed("User prefers Python"), embed("user   PREFERS python")
    assert first == second
    assert all(0 <= bucket < DIMENSIONS for bucket in first)
    assert similarity(first, first) == pytest.approx(1.0, abs=1e-3)
    assert embed("") == {} or similarity(embed(""), first) < 0.5
    assert similarity(embed("python backend"), embed("python backend development")) > similarity(
        embed("python backend"), embed("the weather in paris")
    )


def test_index_dot_products_match_direct_similarity():
    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "python", "memory", "agent", "cell", "decay", "search"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(BLOCK + 50)]
    index = VectorIndex()
    vectors = [embed(text) for text in texts]
    for slot, vector in enumerate(vectors):
        index.add(slot, vector)
    query = embed("python memory search")
    dots = index.dot_products(query)
    assert len(dots) == len(texts)
    for slot in (0, 1, 500, BLOCK - 1, BLOCK, len(texts) - 1):
        assert dots[slot] / (2**15 - 1) ** 2 == pytest.approx(similarity(query, vectors[slot]), abs=1e-9)
    index.remove(3, vectors[3])
    assert index.dot_products(query)[3] == 0
    index.add(3, embed("python memory search"))
    assert index.dot_products(query)[3] == max(index.dot_products(query))
