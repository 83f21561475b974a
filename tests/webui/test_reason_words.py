"""The memory page says why curation did what it did in words, not in its reason codes."""

from __future__ import annotations

import html

import pytest

from keepmind.engine.wording import reason_words
from support.pages import signed_in
from support.provider import drain


@pytest.mark.parametrize("code,words", [
    ("no_llm_same_anchor_append", "added to the memory on the same subject (no LLM is configured)"),
    ("llm_failed_nominee_create", "new (the LLM failed)"),
    ("merge_guard_failed: retention 0.40", "added to this memory: the model's merge would have lost what it said "
                                           "(retention 0.40)"),
    ("tombstone", "refused: this claim was deleted as wrong"),
    ("curation:append", "added to by curation"),
    ("kept in review", "kept in review"),  # already words: as it is
    (None, ""),
])
def test_reason_codes_read_as_words(code, words):
    assert reason_words(code) == words


def test_the_memory_page_says_an_append_without_an_llm_in_words(engine, personal, clock):
    tracker = "Headphone price"
    for price in ("$349", "$329"):
        engine.store_memory(personal, tracker, f"Sony WH-1000XM5 costs {price} at Best Buy this week.")
        drain(engine)
        clock.advance(7 * 86_400_000)
    [doc] = [m for m in engine.list_memories(personal) if m.kind == "document"]
    client, _ = signed_in(engine)
    page = html.unescape(client.get(f"/memories/{doc.id}").get_data(as_text=True))
    events = page.split('id="ev-h"')[1].split("</section>")[0]
    assert "added to the memory on the same subject (no LLM is configured)" in events
    assert ">no_llm_same_anchor_append<" not in events  # the code stays in the tooltip only
    assert 'title="no_llm_same_anchor_append"' in events


def test_a_memory_body_shows_its_markdown_as_what_it_means_and_stays_escaped():
    from keepmind.webui.pages.render import body_html

    shown = str(body_html("Newest <b>seat</b>.\n\n---\n_[earlier, as of 2026-01-01]_\nRun `make <x>` **first**."))
    assert '<span class="earlier">earlier, as of 2026-01-01</span>' in shown and "_[" not in shown
    assert "<code>make &lt;x&gt;</code>" in shown and "<strong>first</strong>" in shown
    assert "&lt;b&gt;seat&lt;/b&gt;" in shown and "<b>" not in shown
    fenced = str(body_html("Deploy:\n```sh\n<script>x()</script>\n```\ndone"))
    assert '<pre class="code"><code>&lt;script&gt;x()&lt;/script&gt;\n</code></pre>done' in fenced
    assert "```" not in fenced


def test_the_memory_page_says_a_diet_is_recalled_for_every_food_task(engine, personal):
    diet = engine.store(personal, "", "I'm gluten intolerant.").id
    liking = engine.store(personal, "", "I love sourdough.").id
    client, _ = signed_in(engine)
    page = html.unescape(client.get(f"/memories/{diet}").get_data(as_text=True))
    row = page.split('id="recalled-for"')[1].split("</div>")[0]
    assert "every task about food or drink (a diet)" in row
    assert 'id="recalled-for"' not in client.get(f"/memories/{liking}").get_data(as_text=True)
