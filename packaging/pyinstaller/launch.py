"""The frozen app's entry point: the same as the `keepmind` command (no command: the tray)."""

import sys

from keepmind.desktop.cli import main

if __name__ == "__main__":
    sys.exit(main())
