"""A revision's diff shows the title and the text apart, each labelled: shown as one run of words,
a title that is the text's first sentence read as the same sentence twice. A title that did not
change is said to be unchanged, not diffed."""

from __future__ import annotations

import re

from support.pages import sign_in


def diff_box(html: str) -> str:
    return re.search(r'<div id="diff">(.*?)</div>', html, re.S).group(1)


def labelled(box: str) -> list[tuple[str, str]]:
    """(label, what the diff under it deleted and inserted) for each labelled part."""
    out = []
    for label, body in re.findall(r'<h4 class="diff-label">([^<]+)</h4>\s*<p class="diff"[^>]*>(.*?)</p>', box, re.S):
        changes = " ".join(f"{op}:{text}" for op, text in re.findall(r"<(del|ins)>([^<]*)</\1>", body))
        out.append((label, changes))
    return out


def test_a_title_that_changed_with_the_text_is_diffed_under_its_own_label(client, engine, personal):
    sign_in(client, engine)
    doc = engine.store(personal, "Anna lives in Lisbon.", "Anna lives in Lisbon. She visits in May.").id
    engine.update(personal, doc, old_text="Lisbon", new_text="Porto")
    for path in (f"/memories/{doc}", f"/memories/{doc}/diff?a=1&b=2"):
        box = diff_box(client.get(path).get_data(as_text=True))
        assert "Revision 1 → 2" in box
        assert labelled(box) == [("Title", "del:Lisbon ins:Porto"), ("Text", "del:Lisbon ins:Porto")], path
    fragment = client.get(f"/memories/{doc}/diff?a=1&b=2", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert labelled(fragment) == [("Title", "del:Lisbon ins:Porto"), ("Text", "del:Lisbon ins:Porto")]


def test_a_title_that_did_not_change_is_said_so_and_only_the_text_is_diffed(client, engine, personal):
    sign_in(client, engine)
    doc = engine.store(personal, "Home airport", "My home airport is Lisbon.").id
    engine.update(personal, doc, old_text="Lisbon", new_text="Porto")
    box = diff_box(client.get(f"/memories/{doc}").get_data(as_text=True))
    assert "Title unchanged: “Home airport”" in box
    assert labelled(box) == [("Text", "del:Lisbon ins:Porto")]
    assert box.count("Home airport") == 1  # not diffed as equal words above the text


def test_a_retitle_says_the_text_did_not_change(client, engine, personal):
    sign_in(client, engine)
    doc = engine.store(personal, "Airport", "My home airport is Lisbon.").id
    engine.update(personal, doc, title="Home airport")
    box = diff_box(client.get(f"/memories/{doc}").get_data(as_text=True))
    assert labelled(box) == [("Title", "del:Airport ins:Home airport")]
    assert "The text did not change." in box
