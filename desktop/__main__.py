import sys

from keepmind.desktop.cli import main

sys.exit(main())
