"""Writing and editing a memory in the browser: what is refused is said in words, the person's text
stays in the form, and nothing is written twice or brought back from the deleted ones unasked."""

from __future__ import annotations

import pytest

from keepmind.engine import InvalidInput
from support.pages import sign_in
from support.secret_corpus import secret_corpus


@pytest.fixture
def signed_in(client, engine):
    """The client signed in with the local token, and the page's CSRF token."""
    return engine.ensure_token(None), sign_in(client, engine)


def write(client, csrf, content, **fields):
    data = {"csrf_token": csrf, "content": content, "audience": "personal", "boundary": "work", **fields}
    return client.post("/memories", data=data)


def live(engine, local) -> list[str]:
    return [m.body for m in engine.list_memories(engine.viewer(local.token), limit=100)]


def test_an_edit_with_a_secret_keeps_the_editor_and_says_why(client, engine, personal, signed_in):
    local, csrf = signed_in
    doc = engine.store(personal, "Anna", "Anna lives in Lisbon.").id
    # A GitHub token made at run time (support.secret_corpus: no credential-shaped literal in the repository).
    sentence, secret = next((s, part) for s, part in secret_corpus() if "GitHub token" in s)
    r = client.post(f"/memories/{doc}/edit", headers={"HX-Request": "true"},
                    data={"csrf_token": csrf, "mode": "rewrite", "title": "Anna", "content": sentence})
    html = r.get_data(as_text=True)
    assert r.status_code == 422
    assert "Not saved: secret-like content is never stored" in html
    assert secret in html  # the person's text is still in the editor
    assert live(engine, local) == ["Anna lives in Lisbon."]


def test_writing_what_is_already_remembered_points_to_it_instead_of_a_copy(client, engine, signed_in):
    local, csrf = signed_in
    first = write(client, csrf, "I'm allergic to peanuts.")
    assert first.status_code == 303
    doc = first.headers["Location"].rsplit("/", 1)[1]
    again = write(client, csrf, "I'm allergic to peanuts.")
    html = again.get_data(as_text=True)
    assert again.status_code == 422 and "already says this word for word" in html
    assert f'href="/memories/{doc}"' in html
    assert live(engine, local) == ["I'm allergic to peanuts."]
    # Another boundary is another scope: written there.
    assert write(client, csrf, "I'm allergic to peanuts.", boundary="home").status_code == 303


def test_a_claim_deleted_as_wrong_is_not_written_back_until_it_is_restored(client, engine, signed_in):
    local, csrf = signed_in
    doc = write(client, csrf, "I drink my coffee black.").headers["Location"].rsplit("/", 1)[1]
    assert client.post(f"/memories/{doc}/delete", data={"csrf_token": csrf}).status_code == 303
    r = write(client, csrf, "I drink my coffee black.")
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and "deleted as wrong" in html and 'href="/memories?deleted=1"' in html
    assert live(engine, local) == []
    tombstone = engine.tombstones(token=local.token)[0]
    engine.restore(tombstone["tombstone_id"], token=local.token)
    assert live(engine, local) == ["I drink my coffee black."]
    assert write(client, csrf, "I drink my coffee black.").status_code == 422  # now a duplicate of the restored one


def test_a_forged_class_and_an_overlong_anchor_are_refused_in_words(client, engine, signed_in):
    local, csrf = signed_in
    r = write(client, csrf, "Said in a session.", memory_class="trace")
    assert r.status_code == 422 and "Choose durable fact or evidence" in r.get_data(as_text=True)
    r = write(client, csrf, "Anna's birthday is 3 May.", anchor="A" * 301)
    assert r.status_code == 422 and "anchor is 301 characters; the limit is 300" in r.get_data(as_text=True)
    assert live(engine, local) == []
    assert write(client, csrf, "Anna's birthday is 3 May.", anchor="Anna").status_code == 303


def test_the_engine_holds_an_anchor_to_a_titles_length(engine, personal):
    with pytest.raises(InvalidInput, match="anchor is 301 characters"):
        engine.store(personal, "", "A fact.", anchor="x" * 301)


def test_what_no_page_can_undo_is_asked_first(client, engine, team, signed_in):
    local, csrf = signed_in
    doc = engine.store(team, "Standup", "Standup is at 9:30.").id
    asked = client.post(f"/memories/{doc}/audience", data={"csrf_token": csrf, "audience": "personal"})
    html = asked.get_data(as_text=True)
    assert asked.status_code == 200 and "Make “Standup” personal?" in html and 'value="yes"' in html
    assert engine.memory(engine.viewer(local.token), doc).audience == "team"
    done = client.post(f"/memories/{doc}/audience", data={"csrf_token": csrf, "audience": "personal",
                                                          "confirmed": "yes"})
    assert done.status_code == 303 and engine.memory(engine.viewer(local.token), doc).audience == "personal"

    other = engine.create_token("helper", "team", ["work"], by=local.token)
    asked = client.post(f"/tokens/{other.token.id}/revoke", data={"csrf_token": csrf})
    assert "Revoke helper?" in asked.get_data(as_text=True)
    assert not next(t for t in engine.list_tokens(include_revoked=True) if t.id == other.token.id).revoked_at
    client.post(f"/tokens/{other.token.id}/revoke", data={"csrf_token": csrf, "confirmed": "yes"})
    assert next(t for t in engine.list_tokens(include_revoked=True) if t.id == other.token.id).revoked_at


def test_an_edit_the_form_cannot_make_is_said_in_the_forms_words(client, engine, personal, signed_in):
    local, csrf = signed_in
    doc = engine.store(personal, "Anna", "Anna lives in Lisbon.").id
    r = client.post(f"/memories/{doc}/edit", data={"csrf_token": csrf, "mode": "rewrite", "content": "  "})
    assert r.status_code == 422 and "The text is empty: to remove this memory, delete it as wrong." in r.text
    r = client.post(f"/memories/{doc}/edit", data={"csrf_token": csrf, "mode": "replace", "old_text": "lisbon",
                                                   "new_text": "Porto"})
    assert r.status_code == 422 and "The text to find is not in this memory" in r.text
    assert "new_content" not in r.text and "old_text was" not in r.text
    assert live(engine, local) == ["Anna lives in Lisbon."]


def test_the_form_offers_the_boundaries_in_use_to_a_token_that_may_use_any(client, engine, signed_in):
    engine.open_session("personal", "home")
    for _ in range(2):
        engine.open_session("team", "work")
    page = client.get("/memories/new").get_data(as_text=True)
    assert 'name="boundary" value="work"' in page
    assert '<option value="work">' in page and '<option value="home">' in page
    # the filled-in field filters its datalist to "work": each boundary in use is a button too
    assert 'data-value="work"' in page and 'data-value="home"' in page and "or type a new one" in page


def test_an_empty_store_fills_in_the_default_boundary(client, engine, signed_in):
    page = client.get("/memories/new").get_data(as_text=True)
    assert f'name="boundary" value="{engine.settings["mcp.boundary"]}"' in page


def test_a_deleted_claim_said_whole_with_more_is_not_written_back(client, engine, signed_in):
    """A walk wrote "I have a dog named Rolo, he is 3." back after "I have a dog named Rolo." was
    deleted as wrong: only the same words were refused here, where `memories add` refuses both."""
    local, csrf = signed_in
    doc = write(client, csrf, "I have a dog named Rolo.").headers["Location"].rsplit("/", 1)[1]
    assert client.post(f"/memories/{doc}/delete", data={"csrf_token": csrf}).status_code == 303
    r = write(client, csrf, "I have a dog named Rolo, he is 3.")
    assert r.status_code == 422 and "says a memory that was deleted as wrong" in r.get_data(as_text=True)
    assert live(engine, local) == []
    # its correction is another claim, and is written
    assert write(client, csrf, "I do not have a dog named Rolo.").status_code == 303


def test_a_memory_written_by_hand_feeds_the_graph_as_an_agents_does(client, engine, signed_in):
    """"My brother Tom lives in Berlin." written in the browser hung on no anchor and named no one;
    stored by an agent it gives Tom, the user's brother, who lives in Berlin."""
    local, csrf = signed_in
    doc = write(client, csrf, "My brother Tom lives in Berlin.").headers["Location"].rsplit("/", 1)[1]
    viewer = engine.viewer(local.token)
    [item] = engine.get(viewer, [doc]).items
    anchors = {a.name: a for a in engine.anchors(viewer)}
    assert item.anchor_id == anchors["Tom"].id and anchors["Tom"].type == "person"
    ties = {(e.from_name, e.relation, e.to_name) for e in engine.edges(viewer, anchors["Tom"].id)}
    assert ("Tom", "lives_in", "Berlin") in ties and any(r == "brother" for _, r, _ in ties)
    # an anchor the person names is kept; the ties are still read
    other = write(client, csrf, "My sister Anna lives in Lisbon.", anchor="Family").headers["Location"]
    [anna] = engine.get(viewer, [other.rsplit("/", 1)[1]]).items
    anchors = {a.name: a for a in engine.anchors(viewer)}
    assert anna.anchor_id == anchors["Family"].id and "Anna" in anchors


def test_a_memory_too_long_for_recall_says_so_on_its_page(client, engine, signed_in):
    local, csrf = signed_in
    long_doc = write(client, csrf, "I like long walks on the beach. " * 400).headers["Location"]
    html = client.get(long_doc).get_data(as_text=True)
    assert 'id="too-long"' in html and "Never recalled: at 12,799 characters" in html
    assert "Search still finds it" in html
    short = write(client, csrf, "I like short walks.").headers["Location"]
    assert 'id="too-long"' not in client.get(short).get_data(as_text=True)


def test_while_memory_is_paused_nothing_is_written_by_hand(client, engine, signed_in):
    """A walk paused memory, then wrote "I love hiking in the Alps." in the browser: kept, while
    `memories add` said "not kept: memory is paused"."""
    local, csrf = signed_in
    engine.pause()
    r = write(client, csrf, "I love hiking in the Alps.")
    assert r.status_code == 422 and "memory is paused" in r.get_data(as_text=True)
    assert "I love hiking in the Alps." in r.get_data(as_text=True)  # the text stays in the form
    assert live(engine, local) == []
    engine.resume()
    assert write(client, csrf, "I love hiking in the Alps.").status_code == 303


def test_a_superseding_records_page_shows_what_it_replaced(client, engine, personal, signed_in):
    """A walk: a superseded record's page showed nothing of what it replaced (no earlier text)."""
    local, csrf = signed_in
    first = engine.store(personal, "Trip", "Flew to Lisbon on 3 May.", memory_class="evidence").id
    now = engine.update(personal, first, new_content="Flew to Lisbon on 4 May.").new_id
    html = client.get(f"/memories/{now}").get_data(as_text=True)
    replaced = html.split('id="repl-h"')[1].split("</section>")[0]
    assert "Flew to Lisbon on 3 May." in replaced and first in replaced
    assert "Flew to Lisbon on 4 May." not in replaced
    doc = engine.store(personal, "Home", "I live in Porto.").id
    assert 'id="repl-h"' not in client.get(f"/memories/{doc}").get_data(as_text=True)


@pytest.mark.parametrize("kind", ["document", "record"])
def test_a_save_over_a_change_made_since_the_editor_opened_asks_first(client, engine, personal, signed_in, kind):
    """A walk's two open editors: the second Save replaced the first's correction without a word."""
    import re

    local, csrf = signed_in
    memory_class = "durable_fact" if kind == "document" else "evidence"
    mem = engine.store(personal, "Home", "Anna lives in Lisbon.", memory_class=memory_class).id
    form = client.get(f"/memories/{mem}/edit", headers={"HX-Request": "true"}).get_data(as_text=True)
    base = re.search(r'name="base" value="([^"]+)"', form).group(1)
    changed = engine.update(personal, mem, new_content="Anna lives in Porto.")  # another tab saved meanwhile
    data = {"csrf_token": csrf, "mode": "rewrite", "title": "Home", "content": "Anna lives in Braga.", "base": base}
    r = client.post(f"/memories/{mem}/edit", headers={"HX-Request": "true"}, data=data)
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and "changed since you opened the editor" in html and "Anna lives in Porto." in html
    assert "Anna lives in Braga." in html  # what was typed is kept
    assert live(engine, local) == ["Anna lives in Porto."]
    again = re.search(r'name="base" value="([^"]+)"', html).group(1)
    assert again != base
    r = client.post(f"/memories/{changed.new_id or mem}/edit", data={**data, "base": again})
    assert r.status_code == 303 and live(engine, local) == ["Anna lives in Braga."]


def test_a_cleared_boundary_stays_empty_when_the_form_is_shown_again(client, engine, signed_in):
    """Refused for its empty boundary, the form came back with the boundary filled in ("home") again."""
    local, csrf = signed_in
    engine.store(engine.open_session("team", "home"), "Deploys", "The team deploys on Fridays.")
    r = write(client, csrf, "The standup is at nine.", audience="team", boundary="  ")
    html = r.get_data(as_text=True)
    assert r.status_code == 422 and "choose a boundary (a workspace or channel name)" in html
    assert 'id="boundary" name="boundary" value=""' in html
    assert 'id="content" name="content" rows="6" required>The standup is at nine.' in html
