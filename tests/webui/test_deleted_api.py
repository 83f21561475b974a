"""What was deleted as wrong, through the API: GET /deleted, POST /deleted/{id}/restore and
POST /deleted/{id}/erase (only with {"confirm": "erase"}), each within the calling token's
ceiling and boundaries, against a real server."""

from __future__ import annotations

import pytest

MISSING = "tomb-" + "0" * 32
SECRET = "zanzibarquokka"


def no_such(tombstone_id: str) -> dict:
    return {"ok": False, "status": 404,
            "error": f"no deleted memory {tombstone_id}: it was restored already, or it is not yours to see "
                     "(GET /api/v1/deleted lists them)"}


@pytest.fixture
def deleted(live, clock):
    """Three memories deleted as wrong a minute apart (personal, personal, team): their tombstone ids,
    oldest first, and the personal session."""
    eng = live.engine
    personal = eng.open_session("personal", "work")
    team = eng.open_session("team", "work")
    made = []
    for sid, title, text in ((personal, "Card", f"My bank card hint is the {SECRET}."),
                             (personal, "Office", "The office is in Paris."),
                             (team, "Standup", "The team standup is at 9:30.")):
        memory_id = eng.store(sid, title, text).id
        clock.advance(60_000)
        with live.client() as api:
            done = api.post(f"/sessions/{sid}/tools/update_memory", json={"id": memory_id, "delete": True}).json()
        assert done["result"]["action"] == "deleted"
        made.append(memory_id)
    tombs = {t["memory_id"]: t["tombstone_id"] for t in eng.deleted()[0]}
    return {"tombs": [tombs[m] for m in made], "memories": made, "personal": personal}


def test_the_list_is_newest_first_with_what_was_deleted_and_keyset_pages(api, deleted):
    card, office, standup = deleted["tombs"]
    first = api.get("/deleted", params={"limit": 2}).json()
    assert [t["tombstone_id"] for t in first["deleted"]] == [standup, office]
    assert first["deleted"][1] == {
        "tombstone_id": office, "memory_id": deleted["memories"][1], "title": "Office",
        "content": "The office is in Paris.", "class": "durable_fact", "audience": "personal", "boundary": "work",
        "deleted_at": first["deleted"][1]["deleted_at"], "deleted_by": "tool", "reason": "deleted as wrong",
        "erased_at": None}
    assert first["deleted"][0]["deleted_at"] - first["deleted"][1]["deleted_at"] == 60_000
    rest = api.get("/deleted", params={"limit": 2, "before": first["next_before"]}).json()
    assert [t["tombstone_id"] for t in rest["deleted"]] == [card] and rest["next_before"] is None
    assert [t["tombstone_id"] for t in api.get("/deleted").json()["deleted"]] == [standup, office, card]


@pytest.mark.parametrize("params,error", [
    ({"limit": 0}, "limit must be at least 1"),
    ({"limit": "many"}, "limit must be a whole number"),
    ({"limit": 101}, "limit must be at most 100"),
    ({"before": "yesterday"}, "before is not a place in this list: send the next_before of the page before, or "
                              "leave it out for the first page"),
    ({"after": "x"}, "unknown query parameter 'after'; allowed: limit, before"),
])
def test_a_wrong_page_request_is_refused_in_words(api, params, error):
    r = api.get("/deleted", params=params)
    assert r.status_code == 400 and r.json() == {"ok": False, "status": 400, "error": error}


def test_restore_brings_the_memory_back_and_takes_it_off_the_list(live, api, deleted):
    _, office, _ = deleted["tombs"]
    r = api.post(f"/deleted/{office}/restore")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "restored": {"tombstone_id": office, "memory_id": deleted["memories"][1]}}
    assert office not in [t["tombstone_id"] for t in api.get("/deleted").json()["deleted"]]
    found = api.post(f"/sessions/{deleted['personal']}/tools/find_memories", json={"query": "office Paris"}).json()
    assert [i["id"] for i in found["items"]] == [deleted["memories"][1]]
    again = api.post(f"/deleted/{office}/restore")
    assert again.status_code == 404 and again.json() == no_such(office)


@pytest.mark.parametrize("sent,said", [
    (None, "body needs 'confirm'"),
    ({}, "body needs 'confirm'"),
    ({"confirm": "yes"}, 'confirm must be the word "erase"'),
    ({"confirm": True}, "confirm must be a string"),
])
def test_erase_without_the_confirmation_is_refused_and_says_what_to_send(live, api, deleted, sent, said):
    card = deleted["tombs"][0]
    r = api.post(f"/deleted/{card}/erase", json=sent) if sent is not None else api.post(f"/deleted/{card}/erase")
    assert r.status_code == 400
    assert r.json() == {"ok": False, "status": 400, "error": f'{said}; erasing for good cannot be undone: send the '
                                                             f'body {{"confirm": "erase"}} to go on'}
    listed = {t["tombstone_id"]: t for t in api.get("/deleted").json()["deleted"]}
    assert listed[card]["erased_at"] is None and SECRET in listed[card]["content"]


def test_erase_with_the_confirmation_blanks_every_copy_and_rewrites_the_file(live, api, deleted):
    card = deleted["tombs"][0]
    r = api.post(f"/deleted/{card}/erase", json={"confirm": "erase"})
    assert r.status_code == 200, r.text
    erased = r.json()["erased"]
    assert erased["tombstone_id"] == card and erased["memory_id"] == deleted["memories"][0]
    assert erased["counts"]["revisions"] == 1 and erased["scrubbed"] is True
    assert set(erased["counts"]) == {"revisions", "records", "checkpoints", "turns", "observer_runs",
                                     "curation_events", "receipts", "anchors", "edges"}
    row = next(t for t in api.get("/deleted").json()["deleted"] if t["tombstone_id"] == card)
    assert row["title"] == "(erased)" and row["content"] is None and row["erased_at"] is not None
    for name in ("keepmind.db", "keepmind.db-wal"):
        path = live.daemon.home / name
        assert not path.exists() or SECRET.encode() not in path.read_bytes(), name
    restore = api.post(f"/deleted/{card}/restore")
    assert restore.status_code == 400
    assert restore.json() == {"ok": False, "status": 400, "error": "erased for good: nothing left to restore"}
    again = api.post(f"/deleted/{card}/erase", json={"confirm": "erase"})
    assert again.status_code == 400 and again.json()["error"] == "this memory was erased for good already"


def test_a_team_token_never_sees_nor_acts_on_a_personal_deletion(live, api, deleted):
    card, office, standup = deleted["tombs"]
    secret = live.make_token("team-bot", "team")
    with live.client(secret) as team_api:
        listed = team_api.get("/deleted")
        assert [t["tombstone_id"] for t in listed.json()["deleted"]] == [standup]
        assert SECRET not in listed.text and "Paris" not in listed.text
        answers = {
            "restore": team_api.post(f"/deleted/{office}/restore"),
            "erase": team_api.post(f"/deleted/{card}/erase", json={"confirm": "erase"}),
            "restore a missing one": team_api.post(f"/deleted/{MISSING}/restore"),
        }
        assert answers["restore"].json() == no_such(office)
        assert answers["erase"].json() == no_such(card)
        assert answers["restore a missing one"].json() == no_such(MISSING)  # the same words: nothing leaks
        assert all(r.status_code == 404 for r in answers.values())
        assert team_api.post(f"/deleted/{standup}/restore").status_code == 200  # its own, it may
    standing = {t["tombstone_id"]: t for t in api.get("/deleted").json()["deleted"]}
    assert set(standing) == {card, office}
    assert standing[card]["erased_at"] is None and SECRET in standing[card]["content"]


def test_a_token_of_one_boundary_sees_only_that_boundarys_deletions(live, api, deleted, clock):
    home_sid = live.engine.open_session("team", "home")
    memory_id = live.engine.store(home_sid, "Hose", "The garden hose is green.").id
    live.engine.update(home_sid, memory_id, delete=True)
    home_tomb = next(t["tombstone_id"] for t in live.engine.deleted()[0] if t["memory_id"] == memory_id)
    with live.client(live.make_token("work-only", "team", ["work"])) as work_api:
        assert [t["tombstone_id"] for t in work_api.get("/deleted").json()["deleted"]] == [deleted["tombs"][2]]
        r = work_api.post(f"/deleted/{home_tomb}/erase", json={"confirm": "erase"})
    assert r.status_code == 404 and r.json() == no_such(home_tomb)


def test_an_unknown_id_is_not_found_in_words(api):
    for r in (api.post(f"/deleted/{MISSING}/restore"), api.post(f"/deleted/{MISSING}/erase", json={"confirm": "erase"}),
              api.post("/deleted/not-a-tombstone/restore")):
        assert r.status_code == 404
    assert api.post(f"/deleted/{MISSING}/erase", json={"confirm": "erase"}).json() == no_such(MISSING)
    assert api.post("/deleted/not-a-tombstone/restore").json() == no_such("not-a-tombstone")


def test_the_routes_need_a_token(live, api):
    with live.client(None) as anonymous:
        for r in (anonymous.get("/deleted"), anonymous.post(f"/deleted/{MISSING}/erase", json={"confirm": "erase"})):
            assert r.status_code == 401 and r.json()["ok"] is False
    assert api.get("/deleted").json() == {"ok": True, "deleted": [], "next_before": None}
