"""Tests of the implementation matrix: its file, runs, report, page, diff, badges and site."""
