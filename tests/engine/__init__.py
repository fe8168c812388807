"""Tests of the engine's protocol layer: the registry, the adapters, a third protocol."""
