"""Access control (AMP-ACL-*): the data-driven access matrix, and policy changes, refusals and body tricks.

The checks live in the ``access`` package (``access/checks.py``: what each check asks and judges;
``access/groups.py``: the matrix's shared groups; ``access/vectors.py``: the vectors of
``fixtures/access/matrix.json`` and their local model); this module is where pytest collects them (in
this order, the order a serial run makes their shared steps in), so their node ids stay
``test_access.py::...``.
"""

from amp_conformance.amp01.checks.access import checks as _checks

test_access_matrix = _checks.test_access_matrix
test_refusals_are_403_with_one_documented_code = _checks.test_refusals_are_403_with_one_documented_code
test_refusal_does_not_reveal_whether_the_cell_exists = (
    _checks.test_refusal_does_not_reveal_whether_the_cell_exists
)
test_policy_changes_take_effect_at_once = _checks.test_policy_changes_take_effect_at_once
test_nothing_in_the_body_raises_a_callers_rights = _checks.test_nothing_in_the_body_raises_a_callers_rights
