"""The access checks' parts (test_access.py holds the checks): the vectors of ``fixtures/access/matrix.json``
and their local model (:mod:`.vectors`), and the shared steps other modules use too (:mod:`.steps`)."""
