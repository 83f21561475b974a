"""`keepmind open`: a one-time link made by the running server, for the local token or `--as`."""

from __future__ import annotations

import httpx

from keepmind.desktop.cli import main


def test_open_print_gives_a_link_that_signs_in_once(live, capsys):
    assert main(["open", "--print", "--home", str(live.daemon.home)]) == 0
    out = capsys.readouterr()
    url = out.out.strip()
    assert url.startswith(live.url + "/signin?code=") and "as local" in out.err
    with httpx.Client() as browser:
        first = browser.get(url)
        assert first.status_code == 303 and first.headers["location"] == "/"
        assert "km_session" in first.headers["set-cookie"]
        again = browser.get(url)  # reloaded in the browser it signed in: on to the pages
        assert again.status_code == 303 and again.headers["location"] == "/"
    with httpx.Client() as other:
        assert other.get(url).status_code == 403  # used already


def test_open_as_another_token_acts_with_its_ceiling(live, capsys):
    live.make_token("teamview", "team", ["work"])
    assert main(["open", "--print", "--as", "teamview", "--home", str(live.daemon.home)]) == 0
    out = capsys.readouterr()
    assert "as teamview: ceiling team" in out.err
    assert main(["open", "--print", "--as", "nobody", "--home", str(live.daemon.home)]) == 2
    assert "nobody" in capsys.readouterr().err


def test_open_without_a_running_keepmind_says_so_with_no_start(tmp_path, capsys):
    assert main(["open", "--print", "--no-start", "--home", str(tmp_path)]) == 2
    assert "not running" in capsys.readouterr().err
