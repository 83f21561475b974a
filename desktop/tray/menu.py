"""What the tray shows, as pure functions of one state value: the menu, the icon and the tooltip.

The tray app turns `menu_items(state)` into pystray items and runs an item's `action` by name, so
every label, check mark and the order are tested without a display.
"""

from __future__ import annotations

from dataclasses import dataclass

from keepmind.engine import Check

HEALTHY, DEGRADED, PAUSED, STARTING = "healthy", "degraded", "paused", "starting"
TOOLTIP_MAX = 127  # Windows cuts tooltips at 128 characters


@dataclass(frozen=True)
class TrayState:
    """Everything the menu, icon and tooltip depend on."""

    health: str = STARTING  # healthy | degraded | paused | starting
    reasons: tuple[str, ...] = ()  # why degraded or paused, one line each
    problems: tuple[Check, ...] = ()  # doctor's warnings and errors
    paused: bool = False
    autostart: bool | None = None  # None: this platform's login entry cannot be written
    has_menu: bool = True  # the backend shows a menu (pystray's X11 fallback has none)
    has_notifications: bool = True
    url: str | None = None


@dataclass(frozen=True)
class Item:
    """One menu entry: its label and the name of the action it runs (None: a separator or a
    line that only informs)."""

    label: str
    action: str | None = None
    checked: bool | None = None  # None: not a check item
    default: bool = False  # what a click on the icon runs, where the platform has such a click
    enabled: bool = True


SEPARATOR = Item("-")
ACTIONS = ("open", "pause", "resume", "doctor", "copy", "autostart", "quit")


def summary(state: TrayState) -> str:
    """One line: the state and its first reason."""
    if state.health == STARTING:
        return "Keepmind is starting"
    head = {HEALTHY: "memory is healthy", PAUSED: "memory is paused", DEGRADED: "memory is degraded"}[state.health]
    if state.health == HEALTHY:
        return f"Keepmind: {head}"
    first = state.reasons[0] if state.reasons else ""
    more = f" (+{len(state.reasons) - 1} more)" if len(state.reasons) > 1 else ""
    if first.startswith(head):  # "memory is paused (since ...)": the reason says the state already
        return f"Keepmind: {first}{more}"
    return f"Keepmind: {head}" + (f": {first}{more}" if first else "")


def tooltip(state: TrayState) -> str:
    """The icon's tooltip: the summary, and where a click is the only way in, that it opens the UI."""
    text = summary(state) + ("" if state.has_menu else " (click to open)")
    return text if len(text) <= TOOLTIP_MAX else text[:TOOLTIP_MAX - 3] + "..."


def icon_state(state: TrayState) -> str:
    """The icon to show: paused wins (a person chose it), then degraded; starting looks healthy."""
    if state.paused or state.health == PAUSED:
        return PAUSED
    return DEGRADED if state.health == DEGRADED else HEALTHY


def menu_items(state: TrayState) -> tuple[Item, ...]:
    """The menu, top to bottom. Open Keepmind comes first: on GNOME/AppIndicator a click on the
    icon only opens this menu, so the first item is the way in."""
    status_line = summary(state)
    items = [
        Item("Open Keepmind", "open", default=True),
        Item(status_line if len(status_line) <= 80 else status_line[:77] + "...", enabled=False),
        SEPARATOR,
        Item("Resume memory", "resume") if state.paused else Item("Pause memory", "pause"),
        Item("Run doctor" + (f" ({len(state.problems)} to look at)" if state.problems else ""), "doctor"),
        Item("Copy agent connection details", "copy"),
        SEPARATOR,
    ]
    if state.autostart is not None:
        items.append(Item("Start at login", "autostart", checked=state.autostart))
        items.append(SEPARATOR)
    items.append(Item("Quit Keepmind", "quit"))
    return tuple(items)


def connection_details(url: str, *, home_flag: str = "", command: str = "keepmind") -> str:
    """What an agent needs to connect: the URL, how to get a token, the MCP command."""
    return "\n".join([
        f"Keepmind API: {url}/api/v1 (OpenAPI document: {url}/api/v1/openapi.json)",
        f"Token: `{command} token show{home_flag}` prints the local token (personal, every boundary); "
        f"`{command} token create NAME --ceiling team{home_flag}` makes one for an agent",
        "Send it as: Authorization: Bearer <token>",
        f"MCP (stdio): {command} mcp{home_flag} --boundary <project>",
        f"Claude Code: claude mcp add keepmind -- {command} mcp{home_flag} --boundary <project>",
    ]) + "\n"


def doctor_summary(checks: list[Check]) -> tuple[str, str]:
    """A notification's title and text for a doctor run."""
    problems = [c for c in checks if c.level != "pass"]
    if not problems:
        return "Keepmind doctor: all is well", f"All {len(checks)} checks pass."
    errors = sum(1 for c in problems if c.level == "error")
    title = (f"Keepmind doctor: {errors} error{'s' if errors != 1 else ''}" if errors
             else f"Keepmind doctor: {len(problems)} warning{'s' if len(problems) != 1 else ''}")
    return title, "\n".join(f"{c.name}: {c.message}" for c in problems)[:1000]


__all__ = ["ACTIONS", "DEGRADED", "HEALTHY", "PAUSED", "SEPARATOR", "STARTING", "Item", "TrayState",
           "connection_details", "doctor_summary", "icon_state", "menu_items", "summary", "tooltip"]
