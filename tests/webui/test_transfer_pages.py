"""The Export and import page on a real server: an export leaves no copy behind once downloaded; a
Markdown import's result says what really happened (a unit still being curated is not "already
here"), its preview does not count anchors and edges it will never make; the result page is a GET
after a redirect, and posting a finished import again says it was imported already."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from keepmind.engine import exchange
from keepmind.engine.writepath import checkpoints

SIX = "".join(f"- Note {n}: the user keeps fact number {n} in mind.\n" for n in range(1, 7))


def preview(web, csrf, name: str, content: bytes, boundary: str = "notes") -> tuple[str, str]:
    """Upload a file to preview its import: (the page, the staging id its Import button posts to)."""
    r = web.post("/transfer/preview", data={"csrf_token": csrf, "audience": "personal", "boundary": boundary},
                 files={"file": (name, content)}, follow_redirects=True)
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


def test_an_import_answers_with_a_redirect_and_posting_it_again_says_it_was_imported(server, browser, make_engine,
                                                                                      tmp_path):
    web, csrf = browser
    eng = server.engine
    other = make_engine(tmp_path / "other")  # two memories, one of them imported here already
    src = other.open_session("personal", "work")
    seat = other.store(src, "Seat", "Window seats, never the last row.").id
    other.store(src, "Aisle", "Aisle seats on night trains.")
    path, name = tmp_path / "keepmind-export.jsonl", "keepmind-export.jsonl"
    other.export(path)
    lines = path.read_text().splitlines()
    (tmp_path / "seat.jsonl").write_text("\n".join(line for line in lines if seat in line or '"header"' in line))
    assert eng.import_path(tmp_path / "seat.jsonl")["imported"] == 1
    page, staging = preview(web, csrf, name, path.read_bytes())
    assert "1 would be imported from keepmind-export.jsonl, 1 already here." in page

    first = import_staged(web, csrf, staging)
    assert first.status_code == 303 and first.headers["Location"] == f"/transfer/import/{staging}"
    result = web.get(first.headers["Location"])
    assert result.status_code == 200
    assert status_line(result.text) == f"1 imported from {name}." and "1 already here" in result.text
    assert web.get(first.headers["Location"]).text == result.text  # a reload only reads

    again = import_staged(web, csrf, staging)  # Back, then Import again
    assert again.status_code == 303 and again.headers["Location"] == f"/transfer/import/{staging}?again=1"
    text = web.get(again.headers["Location"]).text
    assert f"{name} was imported already" in text and "nothing was imported again" in text
    assert "gone" not in text


def test_the_upload_answers_with_a_redirect_to_its_preview_which_a_reload_only_reads(server, browser):
    web, csrf = browser
    r = web.post("/transfer/preview", data={"csrf_token": csrf, "audience": "personal", "boundary": "my notes"},
                 files={"file": ("MEMORY.md", SIX.encode())})
    assert r.status_code == 303
    staging = re.fullmatch(r"/transfer/preview/([0-9a-f]{32})\?audience=personal&boundary=my\+notes",
                           r.headers["Location"]).group(1)
    first = web.get(r.headers["Location"])
    assert first.status_code == 200 and "Import 6 memories" in first.text and 'value="my notes"' in first.text
    assert web.get(r.headers["Location"]).text == first.text  # a reload counts again and keeps nothing
    assert server.engine.stats()["documents"] == 0
    imported = import_staged(web, csrf, staging, boundary="my notes")
    back = web.get(r.headers["Location"])  # Back to the preview, once imported: its result, never a resubmission
    assert back.status_code == 303 and back.headers["Location"] == f"/transfer/import/{staging}?again=1"
    assert imported.status_code == 303
    gone = web.get("/transfer/preview/" + "0" * 32)
    assert gone.status_code == 404 and "upload the file again" in gone.text


def preview_page(web, csrf, name: str, content: bytes, boundary: str = "notes") -> httpx.Response:
    return web.post("/transfer/preview", data={"csrf_token": csrf, "audience": "personal", "boundary": boundary},
                    files={"file": (name, content)}, follow_redirects=True)


IMPORT_BUTTON = 'action="/transfer/import/'


def test_the_markdown_zip_downloaded_from_the_page_uploads_back_where_it_came_from(server, browser, make_engine,
                                                                                   tmp_path):
    """A walk re-imported the page's own Markdown export with the form's personal/default: the team/work
    memory was copied into personal/default and the personal/work one became readable from another
    workspace. A Keepmind export puts each memory back where it came from, as the page says."""
    web, csrf = browser
    other = make_engine(tmp_path / "other")  # the export comes from another store
    mine, team = other.open_session("personal", "work"), other.open_session("team", "work")
    other.store(mine, "Sister", "Anna is the user's sister; she lives in Porto.", anchor="Anna", anchor_type="person")
    other.store(mine, "Therapist", "The user's therapist appointment is on Thursdays.")
    other.store(team, "Database", "The team decided to use Postgres for the new service.")
    zipped, name = other.export_file(other.export_folder(), "markdown")
    assert re.fullmatch(r"keepmind-markdown-\d{4}-\d{2}-\d{2}\.zip", name)
    page, staging = preview(web, csrf, name, zipped.read_bytes(), boundary="default")
    assert "Import 3 memories" in page and "Anna is the user" in page and "team · work" in page
    assert "personal · default" not in page  # each where it came from, not the form's scope
    result = web.get(import_staged(web, csrf, staging, boundary="default").headers["Location"]).text
    assert status_line(result) == f"3 imported from {name}."
    eng = server.engine

    def bodies(audience, boundary):
        return sorted(m.body for m in eng.list_memories(eng.open_session(audience, boundary), limit=10)
                      if m.audience == audience)
    assert bodies("personal", "work") == ["Anna is the user's sister; she lives in Porto.",
                                          "The user's therapist appointment is on Thursdays."]
    assert bodies("team", "work") == ["The team decided to use Postgres for the new service."]
    assert bodies("personal", "default") == []
    # uploaded again, it finds every memory where it came from: nothing is copied anywhere
    again = preview_page(web, csrf, name, zipped.read_bytes(), boundary="default").text
    assert "Nothing new: everything in it is here already" in again and IMPORT_BUTTON not in again
    assert bodies("personal", "default") == [] and len(bodies("personal", "work")) == 2
    # and the page says it takes one
    assert "Markdown zip" in web.get("/transfer").text


def test_a_markdown_zip_is_unpacked_with_the_uploads_checks(server, browser):
    import io
    import zipfile

    web, csrf = browser
    escape = io.BytesIO()
    with zipfile.ZipFile(escape, "w") as zf:
        zf.writestr("anna.md", "# Anna\n\n- Anna lives in Porto.\n")
        zf.writestr("../editor.md", "# Editor\n\n- The user edits in Helix.\n")
    r = preview_page(web, csrf, "keepmind-markdown.zip", escape.getvalue())
    assert r.status_code == 422 and "a path that escapes the archive" in r.text and IMPORT_BUTTON not in r.text


def counts_of(page: str) -> dict[str, int]:
    found = re.search(r'<dl class="counts small">(.*?)</dl>', page, re.S).group(1)
    return {dt: int(dd) for dt, dd in re.findall(r"<dt>(.*?)</dt><dd>(\d+)</dd>", found)}


def test_the_preview_of_an_export_counts_what_the_import_then_says_and_the_store_shows(
        server, browser, make_engine, clock, tmp_path):
    """A store with a proposal rejected in review, a memory deleted as wrong, one deleted and
    restored, an edited document (revisions), an edited record (an earlier version), a deleted
    record and an anchor merged into another (its edge closed): the export, previewed in an empty
    data dir, says what importing it does, in the result's words and numbers."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engine"))
    from test_export_roundtrip import reject_in_review

    from keepmind.engine.store import Relation

    src = make_engine(tmp_path / "src", memory__curation__review=True)
    reject_in_review(src, clock)
    mine = src.open_session("personal", "work")
    wrong = src.store(mine, "Office", "The office is in Paris.").id
    src.update(mine, wrong, delete=True)
    back = src.store(mine, "Desk", "The user works at a standing desk.").id
    src.update(mine, back, delete=True)
    src.restore(next(t for t in src.deleted()[0] if t["memory_id"] == back)["tombstone_id"])
    editor = src.store(mine, "Editor", "The user edits in Vim.", anchor="Editor").id
    clock.advance(1000)
    src.update(mine, editor, old_text="Vim", new_text="Helix")
    trip = src.store(mine, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence").id
    src.update(mine, trip, old_text="3 May", new_text="4 May")
    gone = src.store(mine, "Train", "Took the train to Porto.", memory_class="evidence").id
    src.update(mine, gone, delete=True)
    src.store(mine, "Sister", "Anna lives in Porto.", anchor="Anna", anchor_type="person",
              relations=[Relation("lives_in", "Porto", "place"), Relation("knows", "Annie", "person")])
    src.store(mine, "Annie", "Annie likes tea.", anchor="Annie", anchor_type="person")
    scope = src.scope(mine)
    named = {a.name: a.id for a in src.anchors(scope)}
    src.merge_anchors(scope, named["Annie"], named["Anna"])
    exported = src.export(tmp_path / "all.jsonl")
    assert (exported.memories, exported.deleted, exported.earlier) == (5, 2, 1)

    web, csrf = browser
    page, staging = preview(web, csrf, "all.jsonl", (tmp_path / "all.jsonl").read_bytes())
    said = ("5 would be imported from all.jsonl (with 2 deleted memories, kept so their tombstones hold and "
            "1 earlier version of edited records).")
    assert said in " ".join(page.split())
    assert "Import 5 memories" in page
    counts = counts_of(page)
    items = re.findall(r"<li><strong>(.*?)</strong>", page)
    assert sorted(items) == ["Annie", "Desk", "Editor", "Sister", "Trip"]  # the memories, no deleted one
    assert "Flew to Lisbon on 4 May." in page and "3 May" not in page  # nor an earlier version

    result = web.get(import_staged(web, csrf, staging).headers["Location"]).text
    assert status_line(result) == ("5 imported from all.jsonl (with 2 deleted memories, kept so their "
                                   "tombstones hold and 1 earlier version of edited records).")
    eng = server.engine
    here = eng.counts(eng.scope(eng.open_session("personal", "work")), since=0)
    assert counts == {"Memories": 5, "Already here (skipped)": 0, "Anchors": here["anchors"],
                      "Edges": here["edges"], "Deletions": len(eng.deleted()[0])}
    assert here["documents"] + here["records"] == 5 and (here["anchors"], here["edges"]) == (3, 1)
    assert len(eng.deleted()[0]) == 3  # the office, the train and the rejected proposal


def test_an_empty_upload_says_it_is_empty_and_offers_no_import(server, browser):
    web, csrf = browser
    for name, content in (("empty.jsonl", b""), ("blank.jsonl", b"\n  \n"), ("MEMORY.md", b"")):
        r = preview_page(web, csrf, name, content)
        assert r.status_code == 422, name
        assert f"{name} is empty: there is nothing to import in it" in r.text
        assert IMPORT_BUTTON not in r.text and "Nothing new" not in r.text


def test_a_stores_own_export_says_everything_is_here_already_and_offers_no_import(server, browser):
    web, csrf = browser
    eng = server.engine
    eng.store(eng.open_session("personal", "work"), "Seat", "Window seats, never the last row.")
    r = web.post("/transfer/export", data={"csrf_token": csrf, "format": "jsonl"})
    page = preview_page(web, csrf, "mine.jsonl", r.content)
    assert page.status_code == 200
    assert "Nothing new: everything in it is here already." in page.text
    assert IMPORT_BUTTON not in page.text and "Import 0" not in page.text
    assert counts_of(page.text)["Already here (skipped)"] == 1
    # an export of an empty store (a header and nothing else) holds nothing to import either
    header = b'{"type": "header", "format": "keepmind-export", "version": 1}\n'
    page = preview_page(web, csrf, "header.jsonl", header)
    assert "It holds nothing to import." in page.text and IMPORT_BUTTON not in page.text


def test_a_markdown_preview_counts_what_is_here_already_as_its_result_will(server, browser):
    web, csrf = browser
    eng = server.engine
    notes = eng.open_session("personal", "notes")
    eng.store(notes, "", "Note 1: the user keeps fact number 1 in mind.")
    eng.store(notes, "", "Note 2: the user keeps fact number 2 in mind. Note 20 too.")  # says note 2, and more
    page, staging = preview(web, csrf, "MEMORY.md", SIX.encode())
    assert counts_of(page) == {"Memories": 4, "Already here (skipped)": 2} and "Import 4 memories" in page
    result = web.get(import_staged(web, csrf, staging).headers["Location"]).text
    assert status_line(result).startswith("4 imported from MEMORY.md")
    again = preview_page(web, csrf, "MEMORY.md", SIX.encode() + SIX.encode()).text  # twice over, all here now
    assert counts_of(again) == {"Memories": 0, "Already here (skipped)": 12}
    assert "Nothing new: everything in it is here already." in again and IMPORT_BUTTON not in again


def test_an_export_downloads_when_the_server_was_started_with_a_relative_data_dir(tmp_path, clock, start_live,
                                                                                   monkeypatch):
    monkeypatch.chdir(tmp_path)
    live = start_live(Path("relative-home"), clock=clock)  # as `keepmind serve --home A` starts it
    try:
        live.engine.store(live.engine.open_session("personal", "work"), "Anna", "Anna lives in Lisbon.")
        with live.client() as api:
            url = api.post("/ui/links", json={}).json()["url"]
        with httpx.Client(base_url=live.url, timeout=30) as web:
            assert web.get(url).status_code == 303
            csrf = re.search(r'name="csrf-token" content="([^"]+)"', web.get("/").text).group(1)
            r = web.post("/transfer/export", data={"csrf_token": csrf, "format": "jsonl"})
        assert r.status_code == 200 and b"Anna lives in Lisbon." in r.content
    finally:
        live.stop()


def test_a_markdown_preview_counts_a_claim_deleted_here_as_wrong_apart_from_what_is_here(server, browser):
    """A walk deleted a note as wrong and previewed the notes file again: it was counted "Already
    here (skipped)", and the memory was not here."""
    web, csrf = browser
    eng = server.engine
    notes = eng.open_session("personal", "notes")
    kept = eng.store(notes, "", "Note 1: the user keeps fact number 1 in mind.").id
    wrong = eng.store(notes, "", "Note 2: the user keeps fact number 2 in mind.").id
    eng.update(notes, wrong, delete=True)
    two = "".join(f"- Note {n}: the user keeps fact number {n} in mind.\n" for n in (1, 2)).encode()
    page = preview_page(web, csrf, "MEMORY.md", two).text
    assert counts_of(page) == {"Memories": 0, "Already here (skipped)": 1, "Deleted here as wrong (skipped)": 1}
    assert "Nothing new: everything in it is here already, or was deleted here as wrong." in " ".join(page.split())
    eng.update(notes, kept, delete=True)
    page = preview_page(web, csrf, "MEMORY.md", two).text
    assert counts_of(page) == {"Memories": 0, "Deleted here as wrong (skipped)": 2}
    assert "everything in it was deleted here as wrong" in page
