"""``python -m pmd_bench.datasets``: see :mod:`datasets.cli`."""

import sys

from pmd_bench.datasets.cli import main

sys.exit(main())
