"""``python -m datasets``: see :mod:`datasets.cli`."""

import sys

from datasets.cli import main

sys.exit(main())
