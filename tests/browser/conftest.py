"""Browser tests: Debian's chromium driven by Python playwright against a real served Keepmind.

No browser is ever downloaded (`playwright install` is never run): playwright launches the
`chromium` that .ci/run installs. Outside CI a machine without it skips these tests and says
why; in CI (CI=true) a missing chromium fails them.
"""

from __future__ import annotations

import os
import shutil

import pytest

from support.browser import LAPTOP

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = shutil.which("chromium")
    if found is None:
        why = "Debian's chromium is not installed (`apt-get install chromium`; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One chromium per test module. Not per session: playwright's sync API keeps an event loop
    running on the main thread while it is open, which the asyncio tests after these would meet."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=LAPTOP)
    context.set_default_timeout(15_000)
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda m: pg.console_errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
