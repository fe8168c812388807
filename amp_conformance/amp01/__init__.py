"""AMP v0.1.0 (the REST API of requirements.md): context, conventions, cells, decay, envelope, checks."""
