"""Three toy checks: one reads, one writes (a step for the third), one overwrites."""

from amp_conformance.engine.marking import check
from toy_protocol.protocol import ToyContext


@check("TOY-GET-01", "TOY-GET-02")
def test_health_and_unknown_keys(amp: ToyContext) -> None:
    """GET /health is JSON; an unknown key is 404."""
    reply = amp.client().get("/health")
    amp.expect(reply.status == 200, f"GET /health answered {reply.status}", reply, requirement="TOY-GET-01")
    missing = amp.client().get(f"/kv/{amp.key()}-missing")
    amp.expect(
        missing.status == 404, f"an unknown key answered {missing.status}", missing, requirement="TOY-GET-02"
    )


@check("TOY-PUT-01")
def test_put_stores_the_body(amp: ToyContext) -> None:
    """A PUT value is what a GET returns."""
    key = amp.key()
    amp.client().request("PUT", f"/kv/{key}", content="<script>alert(1)</script>")
    reply = amp.client().get(f"/kv/{key}")
    amp.expect(
        reply.text == "<script>alert(1)</script>", f"GET returned {reply.status} {reply.text!r}", reply
    )


@check("TOY-PUT-02")
def test_values_can_be_overwritten(amp: ToyContext) -> None:
    """Storing twice keeps the second value."""
    key = amp.key()
    amp.stored(key, "first")
    amp.client().request("PUT", f"/kv/{key}", content="second")
    reply = amp.client().get(f"/kv/{key}")
    amp.expect(reply.text == "second", f"the overwritten key reads {reply.text!r}", reply)
