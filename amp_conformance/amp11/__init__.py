"""AMP v1.1 (smriti-memcore): catalogue, MCP frame client, REST channel, check context and checks."""
