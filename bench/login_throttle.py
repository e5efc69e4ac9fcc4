"""The probe's forged-lockout sequence against a running server: 10 wrong passwords for `admin` from an attacker's
address, then the right one from the owner's (another) address, and from the attacker's (a shared NAT).

Start a fresh server that trusts this client as a proxy (so X-Forwarded-For names each request's address):

    RAGCHAT_DATA_DIR=$(mktemp -d) TRUSTED_PROXIES=127.0.0.1 RATE_LOGIN_PER_MIN=1000 PORT=8765 ragchat serve
    python bench/login_throttle.py --url http://127.0.0.1:8765 [--patient]

`--patient` also times an attacker who waits out every Retry-After for its 10 guesses. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import time

import httpx

ATTACKER, OWNER = "203.0.113.66", "198.51.100.9"
PASSWORD = "the owner's passphrase"


def attempt(client: httpx.Client, address: str, password: str) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    r = client.post(
        "/api/auth/login",
        json={"username": "admin", "password": password},
        headers={"X-Forwarded-For": address},
        cookies={},
    )
    client.cookies.clear()
    return time.perf_counter() - start, r


def run(url: str, patient: bool) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    with httpx.Client(base_url=url, timeout=120) as client:
        r = client.post("/api/auth/setup", json={"username": "admin", "password": PASSWORD})
        assert r.status_code in (201, 409), r.text
        client.cookies.clear()
        burst = [attempt(client, ATTACKER, f"wrong guess {i}") for i in range(10)]
        rows.append(("attacker's 10 wrong (burst): statuses", " ".join(str(r.status_code) for _, r in burst)))
        rows.append(("attacker's burst: total time", f"{sum(t for t, _ in burst):.2f} s"))
        t, r = attempt(client, OWNER, PASSWORD)
        rows.append(
            (
                "owner, new address, right password",
                f"{r.status_code} in {t:.2f} s"
                + (f" (Retry-After {r.headers.get('retry-after')} s)" if r.status_code == 429 else ""),
            )
        )
        t, r = attempt(client, ATTACKER, PASSWORD)
        rows.append(
            (
                "right password from the attacker's address",
                f"{r.status_code} in {t:.2f} s"
                + (f" (Retry-After {r.headers.get('retry-after')} s)" if r.status_code == 429 else ""),
            )
        )
        if patient:
            guesses, start, refused = 0, time.perf_counter(), 0
            while guesses < 10 and time.perf_counter() - start < 1200:
                _, r = attempt(client, "192.0.2.77", f"patient guess {guesses}")
                if r.status_code == 429:
                    refused += 1
                    time.sleep(float(r.headers.get("retry-after", "1")))
                    continue
                guesses += 1
            rows.append(
                (
                    "patient attacker (waits every Retry-After): 10 guesses",
                    f"{time.perf_counter() - start:.1f} s" + ("" if guesses == 10 else f" (only {guesses} in 20 min)"),
                )
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--patient", action="store_true")
    args = parser.parse_args()
    rows = run(args.url, args.patient)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("| step | result |\n|---|---|")
    for step, result in rows:
        print(f"| {step} | {result} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
