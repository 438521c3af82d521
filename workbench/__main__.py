"""``python -m workbench``: the ``workbench`` command line."""

import sys

from workbench.cli import main

sys.exit(main())
