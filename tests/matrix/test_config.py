"""The implementations file is validated up front: one line, exit 2, no traceback, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_conformance.matrix.config import ConfigError, load_config
from tests.matrix.conftest import run_matrix_command

GOOD = """
[[implementation]]
name = "a"
protocol = "amp-0.1"
base-url = "http://127.0.0.1:1"
"""


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD + 'colour = "red"\n', "unknown key 'colour'"),
        ('[[implementation]]\nname = "a"\nprotocol = "amp-0.1"\n', "no target"),
        ('[[implementation]]\nname = "a"\nprotocol = "amp-2"\nbase-url = "http://x"\n', "protocol 'amp-2'"),
        ('[[implementation]]\nprotocol = "amp-0.1"\nbase-url = "http://x"\n', "name is missing"),
        (GOOD + GOOD, "used twice"),
        (
            '[[implementation]]\nname = "a"\nprotocol = "amp-0.1"\nmcp-command = "x"\n',
            "not a target of amp-0.1",
        ),
        ('[[implementation]]\nname = "a"\nprotocol = "amp-0.1"\nserver-cmd = "srv"\n', "needs {port}"),
        (GOOD + "allow-global-effects = true\n", "needs --admin-token"),
        (GOOD + "environment = { A = 1 }\n", "table of strings"),
        ('tittle = "x"\n' + GOOD, "unknown top-level key 'tittle'"),
        ("title = 'x'\n", "no implementation"),
        ("[[implementation\n", "is not TOML"),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "impl.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=None) as caught:
        load_config(path)
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_the_command_says_it_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / "impl.toml").write_text(GOOD + "api-key = {}\n", encoding="utf-8")
    done = run_matrix_command(["impl.toml", "--json", "m.json"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown key 'api-key'" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "m.json").exists()
    missing = run_matrix_command(["nowhere.toml"], tmp_path)
    assert missing.returncode == 2 and "cannot read nowhere.toml" in missing.stderr


def test_slugs_are_unique_and_file_safe(tmp_path: Path) -> None:
    text = GOOD.replace('"a"', '"Our Server!"') + GOOD.replace('"a"', '"our server"')
    path = tmp_path / "impl.toml"
    path.write_text(text, encoding="utf-8")
    config = load_config(path)
    assert [i.slug for i in config.implementations] == ["our-server", "our-server-2"]
