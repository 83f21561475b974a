"""The browser pages through Flask's test client, for an engine a test opened itself."""

from __future__ import annotations

import re

from flask.testing import FlaskClient

from keepmind.webui.app import create_app


class Loopback(FlaskClient):
    """Sends the Host header the server's allowlist expects (127.0.0.1:8765)."""

    def open(self, *args, **kwargs):
        kwargs.setdefault("base_url", "http://127.0.0.1:8765")
        return super().open(*args, **kwargs)


def sign_in(client: FlaskClient, engine) -> str:
    """Sign `client` in with `engine`'s local token (a one-time link); the pages' CSRF token."""
    secret = engine.ensure_token(None).secret
    url = client.post("/api/v1/ui/links", json={}, headers={"Authorization": f"Bearer {secret}"}).get_json()["url"]
    client.get(url.split("127.0.0.1:8765")[1])
    return re.search(r'name="csrf-token" content="([^"]+)"', client.get("/").get_data(as_text=True)).group(1)


def signed_in(engine) -> tuple[FlaskClient, str]:
    """A test client of `engine`'s pages signed in with the local token, and the pages' CSRF token."""
    app = create_app(engine, {"port": 8765})
    app.test_client_class = Loopback
    client = app.test_client()
    return client, sign_in(client, engine)
