"""The toy protocol's checks."""
