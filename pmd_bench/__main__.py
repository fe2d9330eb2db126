"""``python -m pmd_bench``: the ``pmd-bench`` command (:mod:`pmd_bench.workflow.cli`)."""

from pmd_bench.workflow.cli import exit_without_teardown, main

exit_without_teardown(main())
