"""Helpers of the browser tests (tests/browser/): sign in, wait for htmx, axe-core, screenshots."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / ".cache" / "screenshots"
LAPTOP = {"width": 1366, "height": 800}
NARROW = {"width": 390, "height": 844}


def sign_in(page, live, as_token: str | None = None) -> None:
    """Open the one-time link `keepmind open` would open (made by the server, for the local token
    or `as_token`)."""
    with live.client() as api:
        r = api.post("/ui/links", json={"as": as_token} if as_token else {})
    assert r.status_code == 200, r.text
    page.goto(r.json()["url"])
    assert page.url == live.url + "/", page.url


def hx_settle(page) -> None:
    """Wait until htmx has no request in flight, and has bound every element that asks it to
    (a key pressed before that, on a page just loaded, submits a form natively)."""
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    page.wait_for_load_state("networkidle")
    page.wait_for_function("""() => [...document.querySelectorAll('[hx-get],[hx-post]')]
        .every(el => el['htmx-internal-data'] && el['htmx-internal-data'].initHash)""")


def dialog_settled(page) -> None:
    """Wait until htmx has settled the open dialog: its settle step (20 ms after the swap) focuses the
    dialog's [autofocus] button again, so a key pressed before it lands and the focus jumps back."""
    settled(page, "dialog[open] form")


def settled(page, selector: str) -> None:
    """Wait until htmx has settled the swapped-in form at `selector` (its settle step, 20 ms after the
    swap, is when its [autofocus] field takes the focus)."""
    page.wait_for_function("""(selector) => { const form = document.querySelector(selector);
        return !!(form && form['htmx-internal-data'] && form['htmx-internal-data'].initHash); }""", arg=selector)


def check_axe(page, where: str) -> None:
    """No serious or critical accessibility violation (axe-core, bundled by axe-playwright-python)."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    bad = [v for v in results.response["violations"] if v.get("impact") in ("serious", "critical")]
    assert not bad, f"{where}: " + "; ".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}" for v in bad)


def shoot(page, name: str) -> list[Path]:
    """Screenshots of the current page: light and dark, laptop width and a narrow window."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    made = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for label, size in (("laptop", LAPTOP), ("narrow", NARROW)):
            page.set_viewport_size(size)
            path = SHOTS / f"{name}-{scheme}-{label}.png"
            page.screenshot(path=str(path), full_page=True)
            made.append(path)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(LAPTOP)
    return made
