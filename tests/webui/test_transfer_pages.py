"""The Export and import page on a real server: an export leaves no copy behind once downloaded; a
Markdown import's result says what really happened (a unit still being curated is not "already
here"), its preview does not count anchors and edges it will never make; the result page is a GET
after a redirect, and posting a finished import again says it was imported already."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from keepmind.engine import exchange
from keepmind.engine.writepath import checkpoints

SIX = "".join(f"- Note {n}: the user keeps fact number {n} in mind.\n" for n in range(1, 7))


@pytest.fixture
def server(tmp_path, clock, start_live):
    live = start_live(tmp_path / "home", clock=clock)
    yield live
    live.stop()


@pytest.fixture
def browser(server):
    """An HTTP client signed in the way `keepmind open` signs in, and the pages' CSRF token."""
    with server.client() as api:
        url = api.post("/ui/links", json={}).json()["url"]
    web = httpx.Client(base_url=server.url, timeout=30)
    assert web.get(url).status_code == 303
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', web.get("/").text).group(1)
    yield web, csrf
    web.close()


def preview(web, csrf, name: str, content: bytes, boundary: str = "notes") -> tuple[str, str]:
    """Upload a file to preview its import: (the page, the staging id its Import button posts to)."""
    r = web.post("/transfer/preview", data={"csrf_token": csrf, "audience": "personal", "boundary": boundary},
                 files={"file": (name, content)})
    assert r.status_code == 200, r.text
    return r.text, re.search(r'action="/transfer/import/([0-9a-f]{32})"', r.text).group(1)


def import_staged(web, csrf, staging: str, boundary: str = "notes") -> httpx.Response:
    return web.post(f"/transfer/import/{staging}",
                    data={"csrf_token": csrf, "audience": "personal", "boundary": boundary})


def status_line(html: str) -> str:
    return " ".join(re.search(r'<p role="status">(.*?)<a', html, re.S).group(1).split())


def test_a_downloaded_export_leaves_no_copy_in_the_data_dir(server, browser):
    web, csrf = browser
    server.engine.store(server.engine.open_session("personal", "work"), "Anna", "Anna lives in Lisbon.")
    exports = server.engine.home / "exports"
    for fmt in ("jsonl", "markdown"):
        r = web.post("/transfer/export", data={"csrf_token": csrf, "format": fmt})
        assert r.status_code == 200
        assert b"Anna lives in Lisbon." in r.content if fmt == "jsonl" else r.content[:2] == b"PK"
        deadline = time.monotonic() + 10  # the server removes it once it has sent the last byte
        while any(exports.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(exports.iterdir()) == [], fmt


def test_a_markdown_import_counts_a_unit_still_being_curated_as_such(server, browser, monkeypatch):
    web, csrf = browser
    eng = server.engine
    page, staging = preview(web, csrf, "MEMORY.md", SIX.encode())
    assert "Import 6 memories" in page
    real_drain = eng.drain_checkpoints

    def drain_while_another_worker_holds_one():
        # the running Keepmind's own curation worker took one unit just as the import curates the rest
        eng.write(checkpoints.lease_next, "the-background-worker", eng.now(), 600_000)
        monkeypatch.setattr(eng, "drain_checkpoints", real_drain)
        return real_drain()

    monkeypatch.setattr(eng, "drain_checkpoints", drain_while_another_worker_holds_one)
    monkeypatch.setattr(exchange, "CURATION_WAIT_S", 0)
    r = import_staged(web, csrf, staging)
    assert r.status_code == 303 and r.headers["Location"] == f"/transfer/import/{staging}"
    html = web.get(r.headers["Location"]).text
    assert status_line(html) == "5 imported from MEMORY.md, 1 still being curated."
    assert "already here" not in html and "Not imported" not in html


def test_a_markdown_import_whose_units_are_all_curated_says_they_were_all_imported(server, browser):
    web, csrf = browser
    _, staging = preview(web, csrf, "MEMORY.md", SIX.encode())
    r = import_staged(web, csrf, staging)
    html = web.get(r.headers["Location"]).text
    assert status_line(html) == "6 imported from MEMORY.md."
    assert "skipped" not in html and "already here" not in html
    scope = server.engine.scope(server.engine.open_session("personal", "notes"))
    assert len(server.engine.list_memories(scope, limit=20)) == 6


def test_the_markdown_preview_shows_no_anchor_or_edge_count_the_import_will_not_make(server, browser):
    web, csrf = browser
    page, staging = preview(web, csrf, "MEMORY.md", b"- My colleague Ravi works at Globex.\n")
    counts = re.search(r'<dl class="counts small">(.*?)</dl>', page, re.S).group(1)
    assert "Memories" in counts and "Anchors" not in counts and "Edges" not in counts
    assert "no anchors" in page
    import_staged(web, csrf, staging)
    eng = server.engine
    scope = eng.scope(eng.open_session("personal", "notes"))
    assert [m.body for m in eng.list_memories(scope)] == ["My colleague Ravi works at Globex."]
    assert eng.anchors(scope) == [] and eng.stats()["edges"] == 0  # what the preview said: memories only


def test_an_import_answers_with_a_redirect_and_posting_it_again_says_it_was_imported(server, browser):
    web, csrf = browser
    eng = server.engine
    src = eng.open_session("personal", "work")
    eng.store(src, "Seat", "Window seats, never the last row.")
    folder = eng.export_folder()
    path, name = eng.export_file(folder, "jsonl")
    content = path.read_bytes()
    eng.drop_export(folder)
    _, staging = preview(web, csrf, name, content)

    first = import_staged(web, csrf, staging)
    assert first.status_code == 303 and first.headers["Location"] == f"/transfer/import/{staging}"
    result = web.get(first.headers["Location"])
    assert result.status_code == 200
    assert status_line(result.text) == f"0 imported from {name}." and "1 already here" in result.text
    assert web.get(first.headers["Location"]).text == result.text  # a reload only reads

    again = import_staged(web, csrf, staging)  # Back, then Import again
    assert again.status_code == 303 and again.headers["Location"] == f"/transfer/import/{staging}?again=1"
    text = web.get(again.headers["Location"]).text
    assert f"{name} was imported already" in text and "nothing was imported again" in text
    assert "gone" not in text
