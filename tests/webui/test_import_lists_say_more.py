"""A list the Export and import page cuts short says how many it left out: the result of a Markdown
import listed ten of thirteen units not imported as if they were all."""

from __future__ import annotations

import re


def notes(first: int, last: int) -> bytes:
    return "".join(f"- Note {n}: the user keeps fact number {n} in mind.\n" for n in range(first, last + 1)).encode()


def imported(web, csrf, content: bytes) -> str:
    """Upload, import, and the result page."""
    form = {"csrf_token": csrf, "audience": "personal", "boundary": "notes"}
    r = web.post("/transfer/preview", data=form, files={"file": ("MEMORY.md", content)}, follow_redirects=True)
    staging = re.search(r'action="/transfer/import/([0-9a-f]{32})"', r.text).group(1)
    r = web.post(f"/transfer/import/{staging}", data=form, follow_redirects=True)
    assert r.status_code == 200, r.text
    return r.text


def test_the_units_not_imported_beyond_the_ten_listed_are_counted(server, browser):
    web, csrf = browser
    imported(web, csrf, notes(1, 13))
    html = imported(web, csrf, notes(1, 15))  # the same notes again, and two new ones
    said = " ".join(re.search(r"<p>Not imported: (.*?)</p>", html, re.S).group(1).split())
    assert said.startswith("13 "), said
    listed = re.search(r'<ul class="meta">(.*?)</ul>', html, re.S).group(1)
    assert listed.count("<li>") == 10
    assert '<p class="meta">and 3 more.</p>' in html


def test_a_list_that_is_not_cut_says_nothing_more(server, browser):
    web, csrf = browser
    imported(web, csrf, notes(1, 3))
    html = imported(web, csrf, notes(1, 4))
    assert re.search(r'<ul class="meta">(.*?)</ul>', html, re.S).group(1).count("<li>") == 3
    assert "more.</p>" not in html
