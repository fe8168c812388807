"""Tests of the CI gate: --server-cmd, --app, expectations, diff, summaries, progress line, interrupts."""
