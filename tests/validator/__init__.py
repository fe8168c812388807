"""Tests of the offline validator and its profiles (amr-lite, memorycloud, secrets, rule catalogues)."""
