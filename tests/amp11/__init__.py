"""Tests of the AMP v1.1 checks, MCP client and hooks against the bundled AMP v1.1 reference server."""
