"""The stress tier (``--tier stress``): search over a store that has grown to hundreds of cells.

Index-backed stores (an approximate nearest-neighbour index, a vector database) can lose readable
matches only once they hold many cells, which no other check's small stores provoke. This check grows
one owner of the run's own namespace in steps and, at each step, pages through a search for the text
every cell carries: each cell it made must come back (AMP-SRCH-01). It stops at the first step that
loses a cell and says at which store size. Everything it creates is archived and deleted by the
run's cleanup, as every check's cells are.
"""

from __future__ import annotations

import math
from functools import partial

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.engine.client import Reply

#: The owner's size at each step; each step creates the difference to the one before.
STEPS = (50, 100, 200, 400)
#: A page is the server's max_page_size, never smaller than this (bounds the searches stated below).
MIN_PAGE = 25
MAX_SEARCHES = sum(math.ceil(size / MIN_PAGE) + 1 for size in STEPS)
#: Seconds the check may take in all (its deadline): 400 creates at 0.5 s each and the searches.
DEADLINE = 300.0


@pytest.mark.stress
@check("AMP-SRCH-01", area="srch", deadline=DEADLINE)
def test_search_finds_every_match_as_the_store_grows(amp: Amp01Context) -> None:
    """Search returns every match as one owner grows to 400 cells (≤ 440 requests + 800 cleanup, ≤ 300 s).

    Steps of 50, 100, 200 and 400 cells of one fresh owner, all created by agent "a" with one text; at
    each step the search for that text is paged through (pages of ``max_page_size``, at least 25) and
    must return every cell made so far. The first step that loses one ends the check: its failure
    names the store size at which results were first lost."""
    owner = amp.owner()
    text = f"stress probe {amp.run.run_prefix}"
    body = amp.cell_body(content={"text": text}, identity={"owner_id": owner, "owner_type": "user"})
    client = amp.as_agent("a")
    page = max(MIN_PAGE, amp.max_page_size)
    made: list[str] = []
    for size in STEPS:
        while len(made) < size:
            batch = min(size - len(made), 12)
            replies = amp.at_once(*(partial(client.post, "/memories", body) for _ in range(batch)))
            made += [amp.created_cell(reply)["id"] for reply in replies]
        found: set[str] = set()
        last: Reply | None = None
        for number in range(math.ceil(size / page) + 1):
            last = client.post(
                "/memories/search",
                {"query": text, "owner_id": owner, "limit": page, "offset": number * page},
            )
            amp.expect_status(last, 200, what=f"search of {size} cells, page {number + 1}")
            results = last.json_object().get("results")
            if not isinstance(results, list):
                amp.fail(f"search of {size} cells, page {number + 1}: results is not an array", last)
            found |= {str(c["id"]) for c in results if isinstance(c, dict) and isinstance(c.get("id"), str)}
            if not last.json_object().get("has_more") or not results:
                break
        missing = [cell_id for cell_id in made if cell_id not in found]
        amp.expect(
            not missing,
            f"results were first lost at a store of {size} cells of one owner: search returned "
            f"{size - len(missing)} of the {size} readable cells that match its query exactly "
            f"(missing e.g. {', '.join(missing[:3])})",
            last,
        )
        amp.note(f"search found all {size} cells of one owner")
