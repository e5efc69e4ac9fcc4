"""Trusted proxies (issue 31): X-Forwarded-For counts only from TRUSTED_PROXIES; nobody is trusted by default."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from ragchat.settings import Settings
from ragchat.web.proxies import forwarded_client, parse_networks
from tests.support.accounts import setup_admin
from tests.support.ratelimit import a_fresh_window, in_one_window, next_window, window


async def failed_logins(url: str, n: int, forwarded: Callable[[int], str | None], names: str = "nobody") -> list[int]:
    codes = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as anon:
        for i in range(n):
            header = forwarded(i)
            r = await anon.post(
                "/api/auth/login",
                json={"username": f"{names}{i}", "password": "guess guess"},  # a new name: no per-name lockout
                headers={"X-Forwarded-For": header} if header else {},
            )
            codes.append(r.status_code)
    return codes


async def test_forged_forwarded_for_from_an_untrusted_peer_is_ignored(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="on", rate_login_per_min=10)
    before = await a_fresh_window()
    await setup_admin(server.url)
    setup_window: int | None = window()
    if setup_window != before:  # the sign-in straddled a window's end (which one counted it is not known)
        await next_window()
        setup_window = None
    forged = lambda i: f"203.0.113.{i}, 198.51.100.{i}"  # noqa: E731
    counted, codes = await in_one_window(lambda r: failed_logins(server.url, 13, forged, f"nobody{r}-"))
    # whatever the header said, every attempt counted for 127.0.0.1, the setup's sign-in too when it fell in the
    # same window (it was then the first of ten)
    free = 9 if counted == setup_window else 10
    assert codes[:free] == [401] * free and codes[free:] == [429] * (13 - free), str(codes)


async def test_a_trusted_proxy_names_the_client(live_app: Callable[..., Any]) -> None:
    server = live_app(auth="on", rate_login_per_min=3, trusted_proxies=["127.0.0.1"])
    await setup_admin(server.url)
    # the proxy says each request is from another client: each has its own limit
    assert await failed_logins(server.url, 6, lambda i: f"203.0.113.{i}") == [401] * 6
    # one client through the proxy, whatever it put before itself, reaches its limit
    one = lambda i: f"10.9.9.{i}, 198.51.100.7"  # noqa: E731
    _, same = await in_one_window(lambda r: failed_logins(server.url, 5, one, f"someone{r}-"))
    assert same == [401, 401, 401, 429, 429]


def test_the_chain_is_read_from_the_right_through_trusted_hops() -> None:
    nets = parse_networks(["127.0.0.1", "10.0.0.0/8", "::1"])
    assert forwarded_client("127.0.0.1", ["1.2.3.4"], nets) == "1.2.3.4"
    assert forwarded_client("127.0.0.1", ["6.6.6.6, 1.2.3.4, 10.1.2.3"], nets) == "1.2.3.4"  # spoofed left part
    assert forwarded_client("127.0.0.1", ["6.6.6.6", "1.2.3.4"], nets) == "1.2.3.4"  # two headers: one chain
    assert forwarded_client("192.0.2.1", ["1.2.3.4"], nets) == "192.0.2.1"  # not a proxy: header ignored
    assert forwarded_client("127.0.0.1", ["not-an-ip"], nets) == "127.0.0.1"  # garbage: the proxy itself
    assert forwarded_client("127.0.0.1", ["x" * 10_000 + ", 1.2.3.4"], nets) == "1.2.3.4"
    assert forwarded_client("::1", ["[2001:db8::5]:443"], nets) == "2001:db8::5"
    assert forwarded_client("127.0.0.1", ["10.0.0.2, 10.0.0.3"], nets) == "10.0.0.2"  # all proxies: the first
    assert forwarded_client("127.0.0.1", [], nets) == "127.0.0.1"
    assert parse_networks([]) == []


def test_trusted_proxies_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1, 10.0.0.0/8")
    assert Settings().server.trusted_proxies == ["127.0.0.1", "10.0.0.0/8"]
    monkeypatch.delenv("FORWARDED_ALLOW_IPS")
    assert Settings().server.trusted_proxies == []
    monkeypatch.setenv("TRUSTED_PROXIES", "evil.example.com")
    with pytest.raises(ValidationError, match="not an address or a network"):
        Settings()
