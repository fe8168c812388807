"""The text helpers messages and terminal output share (engine/text.py)."""

from __future__ import annotations

import pytest

from amp_conformance.engine.text import printable, shown


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        (None, "null"),
        (True, "true"),
        ("text", '"text"'),
        ("é", '"é"'),
        ({"a": [1, None]}, '{"a": [1, null]}'),
    ],
)
def test_shown_is_the_json_spelling(value: object, spelled: str) -> None:
    assert shown(value) == spelled


def test_shown_falls_back_to_str_for_what_json_cannot_spell() -> None:
    assert shown({1, 2}) in ("{1, 2}", "{2, 1}")


def test_printable_escapes_control_characters_only() -> None:
    assert printable("\x1b[31mred\x7f\tok\n") == "\\x1b[31mred\\x7f\tok\n"
    assert printable("plain é") == "plain é"
