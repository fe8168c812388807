"""Tests of the benchmarks' helpers (benchmarks/plugins)."""
