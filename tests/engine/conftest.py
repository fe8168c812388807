"""The toy protocol package is data for these tests, not tests of its own."""

collect_ignore = ["toy"]
