"""Tests of the AMP v1.1 reference server itself (verbs, scopes, MXF, errors, faults, MCP frames)."""
