"""The access checks (AMP-ACL-*), collected through ``test_access.py``: the vectors of
``fixtures/access/matrix.json`` and their local model (:mod:`.vectors`), the matrix's shared groups
(:mod:`.groups`), the checks (:mod:`.checks`), and the shared steps other modules read too
(:mod:`.steps`)."""
