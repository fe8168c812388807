"""Named, deliberate deviations from the spec.

Each fault models one bug a real AMP implementation could ship. The suite is self-tested by running it
against the reference server with a fault switched on and proving that some check citing the fault's
requirement fails. Faults are off unless named in ``AMP_REFERENCE_FAULTS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reference_server._faults import Fault, FaultSwitches, UnknownFaultError

__all__ = ["FAULTS", "Fault", "Faults", "UnknownFaultError"]

_ALL: tuple[Fault, ...] = (
    # Read by id
    Fault("get-no-access-count", "AMP-READ-02", "GET by id does not increment scoring.access_count."),
    Fault("get-no-last-accessed", "AMP-READ-03", "GET by id leaves lifecycle.last_accessed_at unset."),
    Fault("unknown-id-500", "AMP-READ-10", "GET, PATCH and DELETE of an unknown id crash with a 500."),
    # Patch
    Fault(
        "patch-replaces-subobject",
        "AMP-PATCH-03",
        "PATCH replaces a sent sub-object whole: unsent keys fall back to their defaults.",
    ),
    Fault("patch-mutable-created-at", "AMP-PATCH-08", "PATCH applies a client-sent lifecycle.created_at."),
    Fault("patch-mutable-owner", "AMP-PATCH-08", "PATCH applies a client-sent identity.owner_id."),
    Fault(
        "archived-can-reactivate", "AMP-PATCH-12", "PATCH may move an archived cell back to active or stale."
    ),
    Fault(
        "archive-status-only-refused",
        "AMP-PATCH-10",
        "The status-only archive PATCH is a 422 (lifecycle.created_at required): archiving needs more.",
    ),
    Fault("patch-deleted-status-allowed", "AMP-PATCH-12", "PATCH lifecycle.status 'deleted' is accepted."),
    Fault(
        "refused-422-applies-valid-members",
        "AMP-PATCH-17",
        "A PATCH refused with 422 still writes the members of its body that were valid.",
    ),
    Fault(
        "refused-409-applies-other-members",
        "AMP-PATCH-12",
        "A PATCH refused with 409 (a forbidden status write) still writes the other members of its body.",
    ),
    Fault(
        "scoring-patch-flips-status",
        "AMP-PATCH-16",
        "A scoring PATCH re-evaluates the decay score and flips the status at once.",
    ),
    # Delete
    Fault("delete-active-allowed", "AMP-DEL-03", "DELETE succeeds on active and stale cells."),
    Fault("delete-returns-200-body", "AMP-DEL-01", "DELETE answers 200 with the cell instead of 204."),
    Fault(
        "deleted-read-wrong-status",
        "AMP-DEL-06",
        "GET of a deleted cell reports lifecycle.status 'archived' (reference convention).",
    ),
    Fault(
        "deleted-in-list",
        "AMP-DEL-05",
        "List (status=deleted) and search (status [deleted]) return deleted cells.",
    ),
    # Errors and identity
    Fault(
        "error-envelope-framework",
        "AMP-ERR-05",
        'Validation failures use the framework default body {"detail": [...]} instead of the envelope.',
    ),
    Fault(
        "transition-wrong-code",
        "AMP-ERR-03",
        "Refused transitions answer 409 with error.code CONFLICT instead of INVALID_TRANSITION.",
    ),
    Fault(
        "hostile-payloads",
        "AMP-ERR-01",
        "Errors are HTML pages, not the JSON envelope, carrying <script>, onerror= and javascript: payloads "
        "(in the body and an X-AMP-Debug header) that a report must show as text and never run.",
    ),
    Fault(
        "missing-agent-id-accepted",
        "AMP-AUTH-01",
        "Requests without X-AMP-Agent-ID are served as the agent 'anonymous'.",
    ),
    # Create and the cell
    Fault("create-wrong-defaults", "AMP-CELL-15", "An omitted scoring.importance defaults to 1.0."),
    Fault(
        "create-honours-client-lifecycle",
        "AMP-CRE-04",
        "POST /memories applies a client-sent lifecycle (status, created_at).",
    ),
    Fault(
        "text-normalised",
        "AMP-CELL-17",
        "content.text is stored NFKC-normalised (ligatures, full-width letters, decomposed accents folded).",
    ),
    Fault(
        "values-coerced",
        "AMP-ERR-04",
        'Create validates loosely: "0.5" is taken as a number, "true" and 1 as the boolean true.',
    ),
    Fault(
        "media-type-parameter-refused",
        "AMP-CRE-01",
        "A JSON body labelled application/json with a parameter (; charset=utf-8) is refused with 422.",
    ),
    Fault(
        "scalar-body-500",
        "AMP-CRE-10",
        "A body that is a JSON number, true, false or null crashes: a 500 in the envelope.",
    ),
    Fault("create-returns-200", "AMP-CRE-01", "POST /memories answers 200 instead of 201."),
    Fault("id-not-ulid", "AMP-CELL-05", "Cell ids are random UUIDs (uuid4), not ULIDs."),
    Fault(
        "timestamps-local-offset", "AMP-CELL-18", "Timestamps are written in local time with a +02:00 offset."
    ),
    # List
    Fault(
        "limit-clamped", "AMP-LIST-05", "List and search silently clamp a too-large limit to max_page_size."
    ),
    Fault("has-more-always-false", "AMP-LIST-08", "List and search always answer has_more false."),
    Fault("query-alias-missing", "AMP-LIST-02", "GET /memories/query is routed as a read of the id 'query'."),
    Fault(
        "owner-filter-folded",
        "AMP-LIST-03",
        "The owner_id filter of list and search ignores letter case and Unicode normalisation.",
    ),
    Fault("list-ignores-acl", "AMP-ACL-14", "GET /memories lists cells the caller may not read."),
    # Capabilities and health
    Fault(
        "health-version-mismatch", "AMP-CAP-03", "/health reports amp_version 0.2.0 while /spec says 0.1.0."
    ),
    Fault(
        "manual-run-endpoint-wrong",
        "AMP-CAP-10",
        "/spec advertises /amp/v1/lifecycle/run-now as the manual run endpoint, which does not exist.",
    ),
    Fault("retention-days-low", "AMP-CAP-09", "/spec advertises retention_days 7."),
    Fault(
        "spec-size-overstated",
        "AMP-CAP-07",
        "/spec advertises twice the max_cell_size_bytes that is enforced.",
    ),
    # Access control
    Fault("search-ignores-readable-by", "AMP-SRCH-15", "Search returns cells whatever their access policy."),
    Fault(
        "wildcard-substring",
        "AMP-ACL-04",
        "An access pattern matches anywhere inside the agent id instead of the whole id.",
    ),
    Fault(
        "forbidden-patch-writes",
        "AMP-ACL-02",
        "A PATCH refused with 403 still writes its body: the refusal is only in the answer.",
    ),
    Fault("public-grants-write", "AMP-ACL-02", "public: true also lets any agent PATCH and DELETE."),
    Fault("no-creator-bypass", "AMP-ACL-08", "The creator has no access unless the policy names it."),
    Fault(
        "identity-case-folded",
        "AMP-ACL-09",
        "The owner and creator bypass compare agent ids ignoring letter case.",
    ),
    Fault(
        "policy-edit-drops-creator",
        "AMP-ACL-08",
        "Once a PATCH replaces readable_by (writable_by), the creator reads (writes) only if it is listed.",
    ),
    Fault("no-owner-bypass", "AMP-ACL-07", "The owner has no access unless the policy names it."),
    # API keys
    Fault(
        "keys-body-created-by",
        "AMP-AUTH-06",
        "In keys mode, POST /memories without credentials falls back to the body's identity.created_by.",
    ),
    Fault(
        "keys-distinct-errors",
        "AMP-AUTH-04",
        "In keys mode, an unknown agent id gets a different 401 message than a wrong key.",
    ),
    Fault("keys-spec-closed", "AMP-AUTH-07", "In keys mode, GET /spec demands an API key."),
    # Admin
    Fault(
        "admin-open-when-disabled",
        "AMP-ADMIN-02",
        "With no AMP_ADMIN_TOKEN configured, POST /lifecycle/run runs a pass for anyone.",
    ),
    Fault("admin-token-ignored", "AMP-ADMIN-03", "POST /lifecycle/run runs a pass whatever token is sent."),
    Fault(
        "admin-token-prefix",
        "AMP-ADMIN-03",
        "POST /lifecycle/run accepts any non-empty prefix of the admin token.",
    ),
    Fault(
        "admin-missing-transition-keys",
        "AMP-ADMIN-04",
        "POST /lifecycle/run omits transition keys whose count is zero.",
    ),
    # Size
    Fault("size-not-enforced", "AMP-SIZE-01", "No size limit is enforced on create."),
    Fault("size-patch-not-enforced", "AMP-SIZE-04", "No size limit is enforced on PATCH."),
    Fault(
        "size-writes-before-refusing",
        "AMP-SIZE-02",
        "An oversized create is stored before the 413 is returned.",
    ),
    # Rate limit
    Fault(
        "spec-rate-overstated",
        "AMP-CAP-08",
        "/spec advertises max_patches two higher than the budget that is enforced.",
    ),
    Fault(
        "rate-429-applies-content",
        "AMP-RATE-12",
        "A scoring PATCH refused with 429 still writes the other members of its body.",
    ),
    Fault(
        "rate-limit-off", "AMP-RATE-01", "Scoring PATCHes are never rate-limited, though /spec says they are."
    ),
    Fault(
        "retry-after-fixed",
        "AMP-RATE-03",
        "Retry-After always announces the whole window instead of the time left in it.",
    ),
    Fault("rate-counts-refused", "AMP-RATE-04", "Refused (429) scoring PATCHes are recorded in the window."),
    Fault("rate-never-forgets", "AMP-RATE-10", "The rate-limit window never expires."),
    Fault("rate-limit-global", "AMP-RATE-07", "One scoring budget is shared by all cells."),
    Fault(
        "rate-before-access",
        "AMP-RATE-08",
        "The scoring budget is checked before write access: strangers get 429 instead of 403.",
    ),
    Fault("rate-counts-non-scoring", "AMP-RATE-05", "Every PATCH counts against the scoring budget."),
    Fault(
        "retry-after-mismatch",
        "AMP-RATE-02",
        "The Retry-After header disagrees with error.details.retry_after_seconds.",
    ),
    # Lifecycle
    Fault("threshold-inclusive", "AMP-LC-04", "A decay score of exactly 0.3 counts as below the threshold."),
    Fault("lifecycle-never-recovers", "AMP-LC-05", "A stale cell never returns to active."),
    Fault("read-does-not-reset-clock", "AMP-LC-06", "A read does not restart the decay clock."),
    Fault("decay-in-hours", "AMP-LC-01", "The decay formula counts Δt in hours, not days (24x too fast)."),
    Fault(
        "decay-whole-days",
        "AMP-LC-01",
        "The decay formula counts Δt in whole days (floored): no cell decays within its first day.",
    ),
    Fault(
        "pass-touches-archived",
        "AMP-LC-08",
        "A pass moves archived cells whose score is high back to active.",
    ),
    # Search
    Fault(
        "search-approximate-index",
        "AMP-SRCH-01",
        "Search answers from an approximate index that silently loses cells of identical text past 4.",
    ),
    Fault(
        "search-index-drops-beyond-n",
        "AMP-SRCH-01",
        "Search answers from an index that holds only the first 100 cells of an owner: once the owner "
        "has more, the later ones are never found (only the stress tier grows a store that far).",
    ),
    Fault("stale-in-default-search", "AMP-SRCH-05", "Search includes stale cells by default."),
    Fault("include-stale-ignored", "AMP-SRCH-06", "Search ignores include_stale: stale cells stay hidden."),
    Fault("search-ignores-types", "AMP-SRCH-04", "Search ignores the types filter."),
    Fault("search-ignores-owner", "AMP-SRCH-03", "Search returns cells of every owner."),
    Fault(
        "search-offset-before-acl",
        "AMP-SRCH-10",
        "Search applies offset to the ranked results before removing cells the caller may not read.",
    ),
    Fault(
        "ranking-ignores-decay", "AMP-SRCH-12", "Search ranks by similarity alone, ignoring the decay score."
    ),
    # The byte level: bodies that are not well-formed JSON requests (the bytes area)
    Fault("bytes-non-utf8-500", "AMP-ERR-03", "A body that is not UTF-8 crashes: a text/plain 500."),
    Fault(
        "bytes-bom-500",
        "AMP-ERR-03",
        "A body starting with a UTF-8 byte-order mark crashes: a text/plain 500.",
    ),
    Fault(
        "bytes-truncated-html",
        "AMP-ERR-01",
        "JSON cut off inside a string is refused by an HTML 400 page (as a proxy in front of it does).",
    ),
    Fault(
        "bytes-duplicate-keys-500",
        "AMP-ERR-03",
        "A member named twice in one object crashes the strict parser: a 500 in the envelope.",
    ),
    Fault(
        "bytes-huge-number-500",
        "AMP-ERR-03",
        "A number beyond any double (1e400, a 400-digit integer) crashes: a 500 in the envelope.",
    ),
    Fault(
        "bytes-deep-nesting-500",
        "AMP-ERR-03",
        "JSON nested deeper than the parser's stack crashes: a text/plain 500.",
    ),
    Fault(
        "bytes-content-type-framework",
        "AMP-ERR-05",
        'A body labelled other than JSON gets the framework\'s 415 {"detail": ...}, not the envelope.',
    ),
    Fault(
        "bytes-missing-content-type-500",
        "AMP-ERR-03",
        "A body without a Content-Type crashes: a text/plain 500.",
    ),
    Fault(
        "bytes-lone-surrogate-500",
        "AMP-ERR-03",
        'A string holding a lone surrogate ("\\ud800") crashes on encoding: a text/plain 500.',
    ),
    Fault("bytes-empty-body-500", "AMP-ERR-03", "An empty body crashes: a 500 in the envelope."),
    Fault("bytes-get-body-500", "AMP-ERR-03", "A GET carrying a body crashes: a 500 in the envelope."),
    # Reached only by unusual input (the fuzzing area); hand-written checks must not trigger these.
    Fault(
        "nonascii-session-500",
        "AMP-ERR-07",
        "A 500 when identity.session_id contains a non-ASCII character.",
    ),
    Fault(
        "huge-integer-500",
        "AMP-ERR-07",
        "A 500 when an integer in content.metadata exceeds 2**53 in absolute value.",
    ),
    Fault(
        "deep-metadata-500",
        "AMP-ERR-07",
        "A 500 when content.metadata nests deeper than 3 levels.",
    ),
)

FAULTS: Mapping[str, Fault] = MappingProxyType({fault.name: fault for fault in _ALL})
"""Every known fault by name, in a stable order."""


class Faults(FaultSwitches):
    """The set of faults switched on for one server; ``on(name)`` is how the code asks."""

    known = FAULTS
    listing = "python -m reference_server --list-faults"
    __slots__ = ()
