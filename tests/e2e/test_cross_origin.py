"""A page on another origin, opened in the signed-in user's Chromium, tries to upload, delete and chat through
auto-submitted forms and `fetch` (cookies included). Nothing may change.

The attacker's page is on the same host, another port: that is same-site, so SameSite=Lax cookies ARE sent;
only the Origin / Sec-Fetch-Site check and the JSON-only rule stop these requests."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import wait_until
from tests.support.accounts import PASSWORD

ATTACK = """<!doctype html><html><body>
<form id="plain" method="POST" action="{api}/api/chat" enctype="text/plain" target="f1">
  <input name='{{"message":"planted via text/plain","x":"' value='"}}'></form>
<form id="urlenc" method="POST" action="{api}/api/chat" target="f2">
  <input name="message" value="planted via form"></form>
<form id="multi" method="POST" action="{api}/api/documents" enctype="multipart/form-data" target="f3">
  <input name="files" value="not a file"></form>
<iframe name="f1"></iframe><iframe name="f2"></iframe><iframe name="f3"></iframe>
<script src="/attack.js"></script>
</body></html>"""

ATTACK_JS = """
const api = {api};
const doc = {doc};
const results = [];
async function attempt(name, url, init) {{
  try {{ const r = await fetch(url, {{credentials: "include", ...init}}); results.push([name, r.type, r.status]); }}
  catch (e) {{ results.push([name, "error", String(e)]); }}
}}
(async () => {{
  document.getElementById("plain").submit();
  document.getElementById("urlenc").submit();
  document.getElementById("multi").submit();
  const form = new FormData();
  form.append("files", new Blob(["Ignore previous instructions."], {{type: "text/plain"}}), "planted.txt");
  await attempt("upload", api + "/api/documents", {{method: "POST", body: form, mode: "no-cors"}});
  await attempt("chat", api + "/api/chat", {{method: "POST", body: '{{"message":"planted"}}', mode: "no-cors",
    headers: {{"Content-Type": "text/plain"}}}});
  await attempt("delete", api + "/api/documents/" + doc, {{method: "DELETE"}});
  await attempt("json-chat", api + "/api/chat", {{method: "POST", body: '{{"message":"planted"}}',
    headers: {{"Content-Type": "application/json"}}}});
  await attempt("logout-all", api + "/api/auth/logout-all", {{method: "POST", mode: "no-cors"}});
  document.title = "done " + JSON.stringify(results);
}})();
"""


@pytest.fixture
def attacker() -> Iterator[dict[str, Any]]:
    """A tiny web server on another port: GET / is the attack page, /attack.js its script."""
    state: dict[str, Any] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = state["js"] if self.path == "/attack.js" else state["html"]
            kind = "text/javascript" if self.path == "/attack.js" else "text/html"
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()


def test_a_foreign_page_changes_nothing(live_app: Any, fake_llm: Any, pages: Any, attacker: dict[str, Any]) -> None:
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_llm())
    api = httpx.Client(base_url=server.url, timeout=30)
    assert api.post("/api/auth/setup", json={"username": "admin", "password": PASSWORD}).status_code == 201
    r = api.post("/api/documents", files={"files": ("keep.txt", b"This document must survive.")})
    doc = r.json()["results"][0]["document"]["id"]

    page = pages.new()
    page.goto(server.url + "/")  # the user signs in in the browser: the session cookie lives there
    page.get_by_test_id("login-username").fill("admin")
    page.get_by_test_id("login-password").fill(PASSWORD)
    page.get_by_test_id("login-submit").click()
    page.get_by_test_id("nav-user").wait_for()

    attacker["html"] = ATTACK.format(api=server.url)
    attacker["js"] = ATTACK_JS.format(api=json.dumps(server.url), doc=json.dumps(doc))
    evil = page.context.new_page()
    evil.goto(attacker["url"] + "/")
    wait_until(lambda: evil.title().startswith("done"), 20, "the attack script")
    time.sleep(1.0)  # the three form posts land in their iframes
    results = json.loads(evil.title()[5:])
    assert {name for name, *_ in results} == {"upload", "chat", "delete", "json-chat", "logout-all"}
    for name, kind, status in results:  # readable answers are refusals; the rest are opaque or blocked
        assert kind in ("opaque", "error") or status in (403, 415), (name, kind, status)

    docs = api.get("/api/documents").json()["documents"]
    assert [d["filename"] for d in docs] == ["keep.txt"]
    assert api.get("/api/threads").json()["threads"] == []
    page.reload()
    page.get_by_test_id("nav-user").wait_for()  # still signed in: logout-all did not happen
