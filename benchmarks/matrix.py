"""Wall time of a 6-implementation matrix (the first six of examples/matrix/implementations.toml, the
v0.1 setups and faulty variants, --no-fuzz) with --jobs 4 against --jobs 1.

    python benchmarks/matrix.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "matrix" / "implementations.toml"


def _six(directory: Path) -> Path:
    """The example file cut to its first six implementations (paths stay relative to examples/matrix)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    blocks = text.split("[[implementation]]")
    assert len(tomllib.loads(text)["implementation"]) >= 6
    path = EXAMPLE.parent / f".bench-{directory.name}.toml"
    path.write_text("[[implementation]]".join(blocks[:7]), encoding="utf-8")
    return path


def _time(path: Path, jobs: int, out: Path) -> tuple[float, int]:
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "amp_conformance",
            "matrix",
            str(path),
            "--no-fuzz",
            "--jobs",
            str(jobs),
            "--json",
            str(out / f"jobs{jobs}.json"),
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    return time.monotonic() - started, done.returncode


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        path = _six(out)
        try:
            parallel, code4 = _time(path, 4, out)
            serial, code1 = _time(path, 1, out)
        finally:
            path.unlink()
    print(
        f"6 implementations, --no-fuzz: --jobs 4 {parallel:.1f} s (exit {code4}), "
        f"--jobs 1 {serial:.1f} s (exit {code1}): {serial / parallel:.1f}x"
    )


if __name__ == "__main__":
    main()
