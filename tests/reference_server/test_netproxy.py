"""The fault-injecting proxy itself (``reference_server/netproxy.py``): each fault reaches an httpx
client as the error a real network would give, on the exchanges chosen, and the counters say so."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from amp_conformance.amp01.selfserve import BundledServer
from reference_server.netproxy import Fault, FaultProxy

HEALTH = "/amp/v1/health"
CREATE = "/amp/v1/memories"


@pytest.fixture(scope="module")
def server() -> Iterator[BundledServer]:
    with BundledServer() as bundled:
        yield bundled


def _cell(owner: str) -> dict[str, object]:
    return {
        "type": "semantic",
        "content": {"text": "netproxy"},
        "identity": {"owner_id": owner, "owner_type": "user"},
    }


def _owned(server: BundledServer, owner: str) -> int:
    """Cells of ``owner`` as the server's own store holds them (no request through the proxy)."""
    response = httpx.get(
        f"{server.url}/amp/v1/memories", params={"owner_id": owner}, headers={"X-AMP-Agent-ID": "agent"}
    )
    assert response.status_code == 200, response.text
    return len(response.json()["results"])


def test_a_clean_proxy_forwards_and_keeps_the_connection(server: BundledServer) -> None:
    with FaultProxy(server.url) as proxy, httpx.Client(base_url=proxy.url) as client:
        direct = httpx.get(server.url + HEALTH)
        answers = [client.get(HEALTH) for _ in range(3)]
        head = client.head(HEALTH)
    assert [a.status_code for a in answers] == [direct.status_code] * 3
    assert answers[0].json().keys() == direct.json().keys()
    assert head.status_code == direct.status_code and head.content == b""
    counts = proxy.counts()
    assert counts["exchanges"] == counts["forwarded"] == 4
    assert proxy.broken() == []


def test_reset_before_never_reaches_the_server(server: BundledServer) -> None:
    owner = "netproxy-reset-before"
    with (
        FaultProxy(server.url, kind="reset-before", match=r"^POST /amp/v1/memories$") as proxy,
        httpx.Client(base_url=proxy.url, headers={"X-AMP-Agent-ID": "agent"}) as client,
    ):
        with pytest.raises(httpx.ReadError):
            client.post(CREATE, json=_cell(owner))
        assert client.get(HEALTH).status_code == 200  # a new connection works
    assert _owned(server, owner) == 0
    assert proxy.counts()["reset-before"] == 1 and proxy.counts()["forwarded"] == 1


def test_reset_after_applies_the_request_and_sends_no_byte(server: BundledServer) -> None:
    owner = "netproxy-reset-after"
    with (
        FaultProxy(server.url, kind="reset-after", match=r"^POST ", nth=(2,)) as proxy,
        httpx.Client(base_url=proxy.url, headers={"X-AMP-Agent-ID": "agent"}) as client,
    ):
        assert client.post(CREATE, json=_cell(owner)).status_code == 201
        with pytest.raises(httpx.ReadError):
            client.post(CREATE, json=_cell(owner))
        assert client.post(CREATE, json=_cell(owner)).status_code == 201
    assert _owned(server, owner) == 3  # the broken create was applied
    [broken] = proxy.broken()
    assert (broken.index, broken.fault, broken.status) == (1, "reset-after", 201)


def test_cut_body_sends_part_of_the_response(server: BundledServer) -> None:
    with (
        FaultProxy(server.url, kind="cut-body") as proxy,
        httpx.Client(base_url=proxy.url) as client,
        pytest.raises(httpx.RemoteProtocolError, match="complete message body"),
    ):
        client.get(HEALTH)
    assert proxy.counts()["cut-body"] == 1


def test_stall_holds_past_the_client_timeout(server: BundledServer) -> None:
    with (
        FaultProxy(server.url, kind="stall", seconds=2.0) as proxy,
        httpx.Client(base_url=proxy.url, timeout=0.3) as client,
    ):
        began = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.get(HEALTH)
        assert time.monotonic() - began < 1.5
    assert proxy.counts()["stall"] == 1


def test_latency_delays_a_whole_answer(server: BundledServer) -> None:
    with (
        FaultProxy(server.url, kind="latency", seconds=0.4, nth=(1,)) as proxy,
        httpx.Client(base_url=proxy.url) as client,
    ):
        began = time.monotonic()
        assert client.get(HEALTH).status_code == 200
        spiked = time.monotonic() - began
        began = time.monotonic()
        assert client.get(HEALTH).status_code == 200
        plain = time.monotonic() - began
    assert spiked >= 0.4 > plain
    assert proxy.counts()["latency"] == 1


def test_a_rate_is_seeded() -> None:
    def picks(seed: int) -> list[int]:
        proxy = FaultProxy("http://127.0.0.1:9", kind="reset-before", rate=0.3, seed=seed)
        return [n for n in range(200) if proxy._choose(f"GET /x/{n}") is not None]

    assert picks(1) == picks(1)
    assert picks(1) != picks(2)
    assert 30 <= len(picks(1)) <= 90


def test_rules_count_their_own_matches() -> None:
    proxy = FaultProxy(
        "http://127.0.0.1:9",
        faults=[
            Fault("cut-body", match=r"^GET /spec", nth=(2,)),
            Fault("reset-after", match=r"^PATCH ", nth=(1,)),
        ],
    )
    labels = ["GET /spec", "PATCH /m/1", "GET /spec", "PATCH /m/2", "GET /spec"]
    chosen = [getattr(proxy._choose(label), "kind", None) for label in labels]
    assert chosen == [None, "reset-after", "cut-body", None, None]


def test_a_bad_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("drop")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Fault("stall", rate=3)
    with pytest.raises(ValueError, match="http://"):
        FaultProxy("127.0.0.1:80")


def test_serial_mode_serves_one_at_a_time(server: BundledServer) -> None:
    with FaultProxy(server.url, serial=True, service=0.2) as proxy:
        results: list[int] = []

        def get() -> None:
            results.append(httpx.get(proxy.url + HEALTH).status_code)

        began = time.monotonic()
        threads = [threading.Thread(target=get) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - began
    assert results == [200] * 4
    assert wall >= 0.8
    counts = proxy.counts()
    assert counts["peak_upstream"] == 1 and counts["peak_active"] >= 2


def test_the_command_line_runs_it(server: BundledServer) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reference_server.netproxy",
            server.url,
            "--kind",
            "reset-before",
            "--nth",
            "1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[0]
        with pytest.raises(httpx.ReadError):
            httpx.get(url + HEALTH)
        assert httpx.get(url + HEALTH).status_code == 200
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert process.returncode == 0
    assert '"reset-before": 1' in out and '"exchanges": 2' in out
