"""The tray app: the icon, its menu and alerts, start at login; the process it runs is the Daemon."""
