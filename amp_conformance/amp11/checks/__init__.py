"""The AMP v1.1 checks: plain pytest tests marked with ``@check("AMP11-...")`` using the ``amp`` fixture."""
