"""Memory text holding a secret is refused on every path that writes memory, the same way.

Each sentence of the secret corpus is sent through every API route that writes memory text
(store_memory, findings, compaction, update_memory with new_content, old_text/new_text and
title, on a living document and on a record it would supersede) and through the Engine calls
the UI's editor makes (store, update). Every answer is "blocked" with the kind named; afterwards
no memory changed and no secret's bytes are in the database, its WAL or an export.
"""

from __future__ import annotations

import random
import re
import string

import httpx

from keepmind.desktop.cli import main as cli
from keepmind.engine.memory import MAX_TITLE_CHARS
from support.secret_corpus import database_bytes, leaks, secret_corpus

DOC_BODY = "The deploy runs from the release branch."
REC_BODY = "Flew to Lisbon on 3 May."


def api_writes(doc: str, rec: str, sentence: str) -> list[tuple[str, dict]]:
    """(route under the session, body) for every API route that writes memory text."""
    writes = [
        ("tools/store_memory", {"title": "Credentials", "content": sentence}),
        ("findings", {"findings": [sentence, {"title": "Found", "content": sentence}]}),
        ("compaction", {"summary": f"Summary of the session. {sentence}"}),
        ("tools/update_memory", {"id": doc, "new_content": sentence}),
        ("tools/update_memory", {"id": doc, "old_text": "release branch", "new_text": sentence}),
        ("tools/update_memory", {"id": rec, "new_content": sentence}),
        ("tools/update_memory", {"id": rec, "old_text": "Lisbon", "new_text": sentence}),
    ]
    if len(sentence) <= MAX_TITLE_CHARS:
        writes += [("tools/store_memory", {"title": sentence, "content": "see the title"}),
                   ("tools/update_memory", {"id": doc, "title": sentence}),
                   ("tools/update_memory", {"id": rec, "title": sentence})]
    return writes


def outcomes(route: str, answer: dict) -> list[dict]:
    return answer["results"] if route == "findings" else [answer["result"]]


def test_every_path_that_writes_memory_text_refuses_a_secret_the_same_way(live, tmp_path):
    engine = live.engine
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Deploy notes", DOC_BODY).id
    rec = engine.store(sid, "Trip", REC_BODY, memory_class="evidence").id
    corpus = secret_corpus()
    not_blocked = []
    with live.client() as api:
        for sentence, _core in corpus:
            for route, body in api_writes(doc, rec, sentence):
                r = api.post(f"/sessions/{sid}/{route}", json=body)
                assert r.status_code == 200, (route, r.text)
                for result in outcomes(route, r.json()):
                    if result["action"] != "blocked" or "secret-like content is never stored (" not in result["reason"]:
                        not_blocked.append((route, result))
            # the UI's editor calls the engine directly
            for result in (engine.store(sid, "Credentials", sentence),
                           engine.store(sid, "Credentials", "x", aliases=[sentence[:200]]),
                           engine.update(sid, doc, new_content=sentence),
                           engine.update(sid, rec, new_content=sentence)):
                if result.action != "blocked" or "secret-like content is never stored (" not in result.reason:
                    not_blocked.append(("engine", result))
    assert not_blocked == []
    # nothing changed: the two memories as they were, one revision, no new memory
    got = {i.id: i for i in engine.get(sid, [doc, rec]).items}
    assert (got[doc].body, got[doc].revision, got[rec].body, got[rec].supersedes) == (DOC_BODY, 1, REC_BODY, None)
    assert [r["body"] for r in engine.revisions(sid, doc)] == [DOC_BODY]
    assert engine.stats()["documents"] == 1 and engine.stats()["records"] == 1
    # every refusal is audited by kind, never by value
    with engine.db.snapshot() as conn:
        blocked = conn.execute("SELECT detail_json FROM curation_events WHERE action='blocked'"
                               " AND reason='secret'").fetchall()
    assert len(blocked) >= len(corpus) * 11
    assert all('"kinds": [' in detail for (detail,) in blocked)
    exported = tmp_path / "export.jsonl"
    assert cli(["export", "--home", str(live.daemon.home), "-o", str(exported)]) == 0
    cores = [core for _, core in corpus]
    assert leaks(cores, exported) == []
    assert [core for core in cores if core.encode() in database_bytes(live.daemon.home)] == []


def test_a_refused_update_names_the_kind_and_not_the_value(live):
    engine = live.engine
    sid = engine.open_session("personal", "work")
    doc = engine.store(sid, "Deploy notes", DOC_BODY).id
    sentence, core = next((s, c) for s, c in secret_corpus() if "ghp_" in s)
    with live.client() as api:
        r = api.post(f"/sessions/{sid}/tools/update_memory", json={"id": doc, "new_content": sentence})
    result = r.json()["result"]
    assert (result["id"], result["action"]) == (doc, "blocked")
    assert result["reason"] == "secret-like content is never stored (a GitHub token)"  # in words, not codes
    assert core not in r.text


def test_a_refused_memory_names_each_kind_of_secret_in_plain_words(live):
    """Refused, the page read "(an AWS access key id: aws_access_key_id, a token: stated_token, an AWS
    secret key: aws_secret_access_key)": the codes are a program's, not a person's."""
    rng = random.Random(7)
    key_id = "AKIA" + "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(16))
    secret = "".join(rng.choice(string.ascii_letters + string.digits + "/+") for _ in range(40))
    token = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))
    with live.client() as api:
        url = api.post("/ui/links", json={}).json()["url"]
    with httpx.Client(base_url=live.url, timeout=30) as web:
        web.get(url)
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', web.get("/").text).group(1)
        r = web.post("/memories", data={"csrf_token": csrf, "audience": "personal", "boundary": "work", "title": "",
                                        "content": f"Deploy keys: {key_id} with secret {secret}. My token is {token}."})
    said = " ".join(r.text.split())
    assert r.status_code == 422
    assert "Not stored: secret-like content is never stored (an AWS access key id, a token, an AWS secret key)." in said
    assert not any(code in r.text for code in ("aws_access_key_id", "stated_token", "aws_secret_access_key"))
    alert = re.search(r'role="alert">([^<]*)', r.text).group(1)  # the form keeps the text, to fix it
    assert key_id not in alert and secret not in alert and token not in alert
