"""The tray opens the browser already signed in: a one-time link from the running server that
lands on the page asked for (Open Keepmind: the overview; Run doctor: the doctor page)."""

from __future__ import annotations

import httpx

from keepmind.desktop.tray.links import open_url


def test_the_tray_link_signs_in_once_and_lands_on_the_page(live):
    link = open_url(live.daemon.home, live.url, "/doctor")
    assert link.startswith(f"{live.url}/signin?code=") and link.endswith("&next=/doctor")
    with httpx.Client(follow_redirects=False) as browser:
        first = browser.get(link)
        assert first.status_code == 303 and first.headers["location"] == "/doctor"
        assert first.cookies.get("km_session")  # signed in
        assert browser.get(f"{live.url}/", follow_redirects=False).status_code == 200  # not sent to /login
        again = browser.get(link)  # reloaded where it signed in: on to the pages
        assert again.status_code == 303
    with httpx.Client(follow_redirects=False) as other:
        assert other.get(link).status_code == 403  # used once


def test_without_a_running_server_the_plain_page_is_opened(tmp_path):
    assert open_url(tmp_path, "http://127.0.0.1:9", "doctor") == "http://127.0.0.1:9/doctor"
