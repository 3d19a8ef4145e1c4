"""``python -m convbench_datasets.cli``: the ``convbench`` command."""

import sys

from . import main

sys.exit(main())
