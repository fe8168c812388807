"""Tests of the HTML report, without a browser and in Debian's chromium."""
