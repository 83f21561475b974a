"""What the pages say is written for a person: error pages head in words, `commands` in messages
show as code, a list's snippet reads curation's separator as words, counts agree with their
nouns, and the MCP line a person copies is one shell word per value."""

from __future__ import annotations

import re
import shlex

import pytest

from keepmind.webui.pages.render import plural, snippet, ticks
from support.pages import sign_in


@pytest.fixture
def csrf(client, engine):
    return sign_in(client, engine)


def test_an_error_page_heads_in_words_and_a_missing_memory_points_to_deleted(client, csrf):
    bad = client.get("/memories/nonexistent")
    assert bad.status_code == 400
    html = bad.get_data(as_text=True)
    assert "<h1>That cannot be done</h1>" in html and "<title>400" not in html
    gone = client.get("/memories/doc-" + "0" * 32)
    assert gone.status_code == 404
    html = gone.get_data(as_text=True)
    assert "<h1>Not found</h1>" in html and 'href="/deleted"' in html


def test_commands_in_a_message_are_shown_as_code_and_the_rest_stays_escaped():
    assert str(ticks("run `keepmind resume` <now>")) == "run <code>keepmind resume</code> &lt;now&gt;"


def test_a_snippet_reads_curations_separator_as_words():
    body = "Anna moved to Porto.\n---\n_[earlier, as of 2026-12-01]_\nUser's sister Anna lives in Lisbon."
    assert snippet(body) == ("Anna moved to Porto. · earlier, as of 2026-12-01: User's sister Anna lives in "
                             "Lisbon.")


@pytest.mark.parametrize(("n", "noun", "said"), [(1, "memory", "1 memory"), (2, "memory", "2 memories"),
                                                 (0, "edge", "0 edges"), (3, "day", "3 days")])
def test_counts_agree_with_their_nouns(n, noun, said):
    assert plural(n, noun) == said


def test_the_mcp_line_quotes_a_boundary_with_a_space(client, engine, csrf):
    r = client.post("/tokens", data={"csrf_token": csrf, "name": "proj", "ceiling": "team",
                                     "boundaries": "my project, work"})
    line = re.search(r'id="snippet-mcp">([^<]+)</pre>', r.get_data(as_text=True)).group(1)
    line = line.replace("&#39;", "'")
    argv = shlex.split(line)
    assert argv[argv.index("--boundary") + 1] == "my project"
    # and the data dir of this Keepmind: `keepmind mcp` alone uses KEEPMIND_HOME or the default (a walk)
    assert argv[argv.index("--home") + 1] == str(engine.home.resolve())


def test_a_role_edge_reads_as_who_the_other_is(client, engine, csrf):
    from keepmind.engine import Relation

    sid = engine.open_session("personal", "work")
    engine.store(sid, "User's sister Anna", "User's sister Anna lives in Lisbon.", anchor="User",
                 anchor_type="person", relations=[Relation("sister", "Anna", "person")])
    scope = engine.scope(sid)
    anna = next(a for a in engine.anchors(scope) if a.name == "Anna")
    user = next(a for a in engine.anchors(scope) if a.name == "User")
    text = re.sub(r"<[^>]+>", "", client.get(f"/anchors/{anna.id}").get_data(as_text=True))
    assert "Anna is User’s sister" in text
    text = re.sub(r"<[^>]+>", "", client.get(f"/anchors/{user.id}").get_data(as_text=True))
    assert "sister: Anna" in text
