import sys

from desktop.cli import main

sys.exit(main())
