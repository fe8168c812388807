"""The terminal's reproduce lines can be pasted (issue 38 item 17): none is cut into a syntax error."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from amp_conformance.matrix.config import Implementation, MatrixConfig
from amp_conformance.matrix.running import printable_command


def _parses(line: str) -> bool:
    return subprocess.run(["bash", "-n", "-c", line], capture_output=True, check=False).returncode == 0


def test_every_reproduce_line_of_a_failing_run_is_a_whole_command() -> None:
    environ = {**os.environ, "AMP_REFERENCE_FAULTS": "size-not-enforced,create-returns-200"}
    done = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--only", "size,cre", "--no-fuzz"],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    commands = [line.split("reproduce: ", 1)[1] for line in done.stdout.splitlines() if "reproduce: " in line]
    assert commands, done.stdout
    broken = [c[:120] for c in commands if not _parses(c)]
    assert broken == []
    # the lines too long to show are in the file each names, whole: curl, or a generator piped into it
    named = [c for c in commands if c.startswith("bash ")]
    assert named, "the sweep shows no long line"
    for command in named:
        whole = Path(shlex.split(command)[1]).read_text(encoding="utf-8").strip()
        assert len(whole) > 400 and re.match(r"(curl|python3|printf) ", whole) and _parses(whole)


def test_a_matrix_reproduce_line_sets_its_variables(tmp_path: Path) -> None:
    impl = Implementation(
        name="x",
        protocol="amp-0.1",
        targets={},
        slug="x",
        environment={"AMP_ADMIN_TOKEN": "s3cret"},
        options={"admin-token": "s3cret"},
    )
    config = MatrixConfig(path=tmp_path / "matrix.toml", title="m", implementations=[impl])
    line = printable_command(impl, config, ["--admin-token", "s3cret"])
    assert 'AMP_ADMIN_TOKEN="${AMP_ADMIN_TOKEN}" amp-conformance' in line, line
    probe = line.split(" && ", 1)[1].replace("amp-conformance", "env | grep '^AMP_ADMIN_TOKEN=' #", 1)
    done = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, env={"AMP_ADMIN_TOKEN": "t"}, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "AMP_ADMIN_TOKEN=t", (probe, done)
