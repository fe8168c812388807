"""Tests of the AMP v0.1.0 suite end to end: self-tests, fault sweep, parallel and plugin runs, the client."""
