"""The AMP v0.1.0 checks: one pytest module per area, each check citing the requirement ids it verifies."""
