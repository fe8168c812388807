"""Where an AMP v0.1.0 server is: its base URL, given with or without the ``/amp/v1`` suffix."""

from __future__ import annotations

import httpx


def normalise_base_url(url: str) -> tuple[str, str]:
    """Return ``(api_base, root)`` for a URL given with or without the ``/amp/v1`` suffix."""
    url = url.strip().rstrip("/")
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if url.endswith("/amp/v1"):
        return url, url[: -len("/amp/v1")]
    return f"{url}/amp/v1", url
