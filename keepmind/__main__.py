"""`python -m keepmind`: the same as the `keepmind` command."""

import sys

from keepmind.desktop.cli import main

sys.exit(main())
