"""Evidence blocks of the HTML page: exchanges, bodies, headers and curl lines.

Everything rendered here came from the server or was built from what it sent, so every piece goes
through :func:`esc` and lands in text content or a quoted attribute, never in markup or a URL. Sizes
are bounded by :class:`Limits` and each cut says what it left out.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from itertools import count

from amp_conformance.engine.report_model import Check, Exchange
from amp_conformance.reports.html_model import as_list, as_text


def esc(value: object) -> str:
    """Escape any value for text or a double-quoted attribute."""
    return html.escape(as_text(value), quote=True)


@dataclass(frozen=True)
class Limits:
    """How much evidence one check shows."""

    body_chars: int
    exchanges: int
    header_chars: int = 400
    headers: int = 40


def cut(text: str, limit: int) -> tuple[str, str | None]:
    """``text`` bounded to ``limit`` characters, and a note saying what was cut (or None)."""
    if len(text) <= limit:
        return text, None
    return text[:limit], f"cut: showing {limit:,} of {len(text):,} characters (the JSON report has more)"


def pretty_body(body: object) -> str:
    """A body as text, pretty-printed when it is JSON."""
    text = as_text(body)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text


class Ids:
    """Unique element ids for copy targets within one page."""

    def __init__(self) -> None:
        self._next = count(1)

    def new(self, prefix: str) -> str:
        return f"{prefix}-{next(self._next)}"


class Budget:
    """Characters of evidence a page may still spend: what keeps any report's page bounded."""

    def __init__(self, chars: int) -> None:
        self.left = chars

    def take(self, text: str) -> bool:
        """Spend ``len(text)`` if that much is left (else the budget is spent)."""
        if len(text) > self.left:
            self.left = 0
            return False
        self.left -= len(text)
        return True


#: A command longer than this is shown cut, without a copy button (a cut command would not run).
COPY_CHARS = 20_000


def copyable(text: str, label: str, ids: Ids, *, css: str = "curl") -> str:
    """A preformatted line with a copy button (the button stays hidden until the script runs)."""
    if len(text) > COPY_CHARS:
        return bounded_pre(text, COPY_CHARS, css)
    target = ids.new("cp")
    return (
        f'<div class="copyable"><pre class="{css}" id="{target}"><code>{esc(text)}</code></pre>'
        f'<button type="button" class="copy" data-copy="{target}" hidden>Copy {esc(label)}</button></div>'
    )


def bounded_pre(text: str, limit: int, css: str) -> str:
    shown, note = cut(text, limit)
    note_html = f'<p class="cut">{esc(note)}</p>' if note else ""
    return f'<pre class="{css}">{esc(shown)}</pre>{note_html}'


def _headers(value: object, limits: Limits) -> str:
    pairs: list[tuple[str, str]] = []
    if isinstance(value, dict):
        pairs = [(as_text(k), as_text(v)) for k, v in value.items()]
    else:
        for item in as_list(value):
            if isinstance(item, list | tuple) and len(item) == 2:
                pairs.append((as_text(item[0]), as_text(item[1])))
    if not pairs:
        return '<p class="none">(no headers)</p>'
    rows = []
    for name, text in pairs[: limits.headers]:
        shown, note = cut(text, limits.header_chars)
        suffix = f' <span class="cut">[{esc(note)}]</span>' if note else ""
        rows.append(f"<tr><th scope=row>{esc(name)}</th><td>{esc(shown)}{suffix}</td></tr>")
    more = len(pairs) - limits.headers
    tail = f'<p class="cut">{more} more header(s) not shown</p>' if more > 0 else ""
    return f'<table class="headers">{"".join(rows)}</table>{tail}'


def exchange_block(exchange: Exchange, number: int, limits: Limits, ids: Ids, *, about: bool = False) -> str:
    """One request and its response; ``about`` marks the exchange the finding is about (open)."""
    status, error = exchange.status, exchange.error
    outcome = f"status {esc(status)}" if status is not None else f"no response ({esc(error or 'unknown')})"
    timing = f" · {float(exchange.elapsed_ms):g} ms"
    marker = ' <strong class="about">the exchange this finding is about</strong>' if about else ""
    parts = [
        f'<details class="exchange"{" open" if about else ""}>',
        f"<summary>#{number} <code>{esc(exchange.method)} {esc(exchange.url)}</code> → "
        f"{outcome}{timing}{marker}</summary>",
        '<div class="exchange-body"><h5>Request</h5>',
        _headers(exchange.request_headers, limits),
    ]
    if exchange.request_body not in (None, ""):
        parts.append(bounded_pre(pretty_body(exchange.request_body), limits.body_chars, "body"))
    parts += [f"<h5>Response: {outcome}</h5>"]
    if error:
        parts.append(f'<p class="error-text">Transport error: {esc(error)}</p>')
    if status is not None:
        parts.append(_headers(exchange.response_headers, limits))
        body = pretty_body(exchange.response_body)
        parts.append(
            bounded_pre(body, limits.body_chars, "body") if body else '<p class="none">(empty body)</p>'
        )
    if exchange.curl:
        parts.append(copyable(exchange.curl, "curl", ids))
    parts.append("</div></details>")
    return "".join(parts)


def exchanges_section(check: Check, limits: Limits, ids: Ids, budget: Budget) -> str:
    """Every exchange of a check, bounded; the one the finding is about comes first and open."""
    exchanges = check.exchanges
    if not exchanges:
        return ""
    failing_curl = check.curl
    about = next((i for i, e in enumerate(exchanges) if failing_curl and e.curl == failing_curl), None)
    order = list(range(len(exchanges)))
    if about is not None:
        order.remove(about)
        order.insert(0, about)
    blocks = []
    for i in order[: limits.exchanges]:
        block = exchange_block(exchanges[i], i + 1, limits, ids, about=i == about)
        if not budget.take(block):
            break
        blocks.append(block)
    hidden = len(exchanges) - len(blocks)
    spent = " (the page's evidence budget is spent)" if budget.left == 0 else ""
    tail = f'<p class="cut">{hidden} more exchange(s) not shown{spent}: the JSON report has them</p>'
    tail = tail if hidden else ""
    return f"<h4>Evidence: {len(exchanges)} exchange(s)</h4>{''.join(blocks)}{tail}"


_REPRODUCE = re.compile(r"^\s*reproduce:\s*(curl .+)$", re.MULTILINE)
_SEED = re.compile(r"\bseed (\d+)")


def reproductions(message: str) -> list[str]:
    """``reproduce: curl ...`` lines in a message (fuzz findings carry one each)."""
    return _REPRODUCE.findall(message)


def findings_block(message: str, limits: Limits, ids: Ids) -> str:
    """Fuzz findings: the ``reproduce: curl ...`` lines written into the message, with their seeds."""
    rows = [
        f"<li><p>Finding {number}: reproduction</p>{copyable(curl, 'reproduction', ids)}</li>"
        for number, curl in enumerate(reproductions(message)[: limits.exchanges], start=1)
    ]
    if not rows:
        return ""
    seeds = sorted(set(_SEED.findall(message)))
    seed_note = f"<p>Seed: {esc(', '.join(seeds))} (rerun with <code>--seed</code>)</p>" if seeds else ""
    return f'<h4>Fuzz findings</h4>{seed_note}<ol class="findings">{"".join(rows)}</ol>'
