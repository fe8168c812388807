"""The access matrix's vectors (``fixtures/access/matrix.json``) and the local model the matrix check
judges them by: the templates rendered from the run's agent ids, the spec's matching rule and its
decoys, the surfaces a vector writes through, and the vectors made in another vector's group
(``home``, ``rides_on``: :data:`HOMES`, :data:`RIDERS`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from amp_conformance import Amp01Context, load_fixture
from amp_conformance.amp01.checks._support import shown

MATRIX: dict[str, Any] = load_fixture("access", "matrix.json")
VECTORS: list[dict[str, Any]] = MATRIX["vectors"]

#: Every matrix vector is checked through search and list too, so it cites their read-rule ids.
SURFACE_IDS = ("AMP-SRCH-15", "AMP-ACL-14", "AMP-LIST-07")
READ_SURFACES = ("GET", "search", "list")
WRITE_SURFACES = ("PATCH", "DELETE")
#: Wrong matching rules a vector may guard against (its "decoy").
DECOYS = ("substring", "prefix", "case-insensitive")


# --------------------------------------------------------------------- templates and local model

_PLACEHOLDER = re.compile(
    r"\{(?P<who>[a-z][a-z0-9_-]*)(?:\[(?P<index>-?\d*(?::-?\d*)?)\])?(?:\|(?P<filter>other|flipcase))?\}"
)


class Unexpressible(ValueError):
    """A vector's template cannot be built from the agent ids at hand."""


def template_roles(value: Any) -> set[str]:
    """Roles named by placeholders anywhere in ``value`` (``caller`` excluded)."""
    if isinstance(value, str):
        return {m["who"] for m in _PLACEHOLDER.finditer(value)} - {"caller"}
    if isinstance(value, Mapping):
        return set().union(*(template_roles(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(template_roles(v) for v in value)) if value else set()
    return set()


def _select(value: str, index: str) -> str:
    if ":" in index:
        start, stop = (int(part) if part else None for part in index.split(":"))
        return value[start:stop]
    try:
        return value[int(index)]
    except (IndexError, ValueError):
        raise Unexpressible(f"{shown(value)} has no character [{index}]") from None


def _flip_case(value: str) -> str:
    for position, char in enumerate(value):
        if char.lower() != char.upper():
            return value[:position] + char.swapcase() + value[position + 1 :]
    raise Unexpressible(f"{shown(value)} has no letter whose case could be flipped")


def render(template: str, ids: Mapping[str, str]) -> str:
    """Fill a vector's placeholders (see ``templates`` in matrix.json) from ``ids``."""

    def replace(match: re.Match[str]) -> str:
        value = ids[match["who"]]
        if match["index"] is not None:
            value = _select(value, match["index"])
        if match["filter"] == "other":
            return next(c for c in "-x0" if not value.endswith(c))
        if match["filter"] == "flipcase":
            return _flip_case(value)
        return value

    return _PLACEHOLDER.sub(replace, template)


def pattern_matches(pattern: str, agent: str, rule: str = "spec") -> bool:
    """The spec's matching (``*`` is any run, whole id, case-sensitive), or one of the DECOYS."""
    if rule == "case-insensitive":
        pattern, agent = pattern.lower(), agent.lower()
    elif rule == "substring":
        pattern = f"*{pattern}*"
    elif rule == "prefix" and not pattern.endswith("*"):
        pattern += "*"
    regex = "".join(".*" if part == "*" else re.escape(part) for part in re.split(r"(\*)", pattern))
    return re.fullmatch(regex, agent, re.DOTALL) is not None


def expected_decision(
    policy: Mapping[str, Any], owner_id: str, creator: str, caller: str, action: str, rule: str = "spec"
) -> bool:
    """What the spec (or a decoy rule) decides for ``caller`` (requirements.md AMP-ACL-01/02/07/08)."""
    if caller in (owner_id, creator):
        return True
    if action == "read" and policy.get("public") is True:
        return True
    patterns = policy.get("readable_by" if action == "read" else "writable_by") or []
    return any(pattern_matches(p, caller, rule) for p in patterns)


def render_vector(vector: Mapping[str, Any], ids: Mapping[str, str]) -> tuple[dict[str, Any], str, str]:
    """(policy, owner_id, owner_type) of ``vector`` for these ids; raises Unexpressible."""
    raw = vector.get("policy", {})
    policy = {
        "public": bool(raw.get("public", False)),
        "readable_by": [render(p, ids) for p in raw.get("readable_by", [])],
        "writable_by": [render(p, ids) for p in raw.get("writable_by", [])],
    }
    owner = vector.get("owner") or {}
    owner_id = render(owner["id"], ids) if "id" in owner else ids["owner"]
    return policy, owner_id, owner.get("type", "user")


def expressible(
    vector: Mapping[str, Any], policy: Mapping[str, Any], owner_id: str, creator: str, caller: str
) -> str | None:
    """Why the rendered vector does not test what it means to with these ids, or None."""
    where = f"caller {shown(caller)}, policy {shown(dict(policy))}"
    for action in ("read", "write"):
        wanted = vector["expect"][action]["allowed"]
        if expected_decision(policy, owner_id, creator, caller, action) != wanted:
            return f"with these agent ids the pattern does not express the vector ({where})"
    decoy = vector.get("decoy")
    if decoy and all(
        expected_decision(policy, owner_id, creator, caller, action, decoy)
        == vector["expect"][action]["allowed"]
        for action in ("read", "write")
    ):
        return f"with these agent ids the pattern does not tell {decoy} matching from the spec's ({where})"
    return None


def caller_role(amp: Amp01Context, vector: Mapping[str, Any]) -> str:
    if amp.keys_mode:
        return str(vector["caller"])
    return str(vector.get("keyless_caller", vector["caller"]))


#: Requirements whose question includes the write decision (the read/write split, writable_by, the
#: bypasses, the default policy): a vector citing one is always asked to write.
WRITE_IDS = frozenset({"AMP-ACL-02", "AMP-ACL-03", "AMP-ACL-07", "AMP-ACL-08", "AMP-ACL-09"})


def write_surfaces(vector: Mapping[str, Any]) -> tuple[str, ...]:
    """The surfaces the vector writes through. Both PATCH and DELETE (which must agree, AMP-ACL-02)
    when the vector cites a requirement about the write decision (:data:`WRITE_IDS`) or expects the
    write allowed (the caller's DELETE then removes the cell, which costs nothing). A vector that only
    varies the matching rule (AMP-ACL-04/-06, asked "via GET") and expects the write refused asks the
    write once, through PATCH, when it names a ``writable_by`` pattern or its read is allowed (a read
    grant must not grant the write; the refusal's shape, AMP-ACL-10, shows there); with neither, its
    write decision is the default refusal of a stranger, which default-policy-refuses-a-stranger asks on
    both surfaces, and its GET shows the refusal: it asks no write."""
    if vector["expect"]["write"]["allowed"] or WRITE_IDS & set(vector["requirements"]):
        return WRITE_SURFACES
    if (vector.get("policy") or {}).get("writable_by") or vector["expect"]["read"]["allowed"]:
        return ("PATCH",)
    return ()


#: Vectors asked on another vector's cell, rider -> host (a vector's ``rides_on``): the same owner
#: (template rendered alike), owner type and policy; the rider's caller is refused everything and the
#: host's allowed everything, each on every surface. The rider joins the host's group (its caller
#: lists and searches the group's owner there too) and, once the pages are read, one sequence asks
#: both on the host's cell (``groups._joint_sequence``): one cell instead of two. With other ids (the
#: cells would differ), the rider makes a cell of its own in that group.
RIDERS: dict[str, str] = {str(v["name"]): str(v["rides_on"]) for v in VECTORS if "rides_on" in v}
#: Vectors made in another vector's group, guest -> home: the riders, and the vectors naming a
#: ``home`` (the creator's vectors join the group holding the stranger-refusals cell, a fresh owner's
#: as theirs, whose default policy is also creator-with-the-default-policy's question:
#: ``groups.answered_as_creator``; the creator lists and searches that owner there instead of one of
#: its own).
HOMES: dict[str, str] = {**RIDERS, **{str(v["name"]): str(v["home"]) for v in VECTORS if "home" in v}}
BY_NAME: dict[str, dict[str, Any]] = {vector["name"]: vector for vector in VECTORS}
_ORDER = [vector["name"] for vector in VECTORS]
if any(_ORDER.index(host) > _ORDER.index(rider) for rider, host in RIDERS.items()):
    raise ValueError("a host precedes its rider in matrix.json: its group makes the host's cell first")
if not set(HOMES.values()) <= set(BY_NAME) or any(home in HOMES for home in HOMES.values()):
    raise ValueError("a home in matrix.json names no vector, or a vector made in another's group")


def home_of(vector: Mapping[str, Any]) -> Mapping[str, Any]:
    """The vector whose group ``vector`` belongs to: its home, for a guest (:data:`HOMES`), else itself."""
    host = HOMES.get(str(vector["name"]))
    return BY_NAME[host] if host is not None else vector
