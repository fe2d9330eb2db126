# Dataset preparation: every dataset is one `python -m pmd_bench.datasets prepare` job writing
# {RESULTS}/data/<name>.npz, or the directory {RESULTS}/data/<name> for a corpus (wikipedia,
# wikipedia-dump, lda-synth). Source files are fetched into the data directory or read from the
# offline mirror (config datasets.data_dir / datasets.offline_mirror; the environment variables
# PMD_BENCH_DATA_DIR / PMD_BENCH_DATA_MIRROR override them). The job's JSON summary is its log;
# progress bars and errors go to the terminal.
#
# DATASET_TARGETS: what the config asks for, datasets.prepare always and
# datasets.prepare_with_mirror only when an offline mirror is set (the default config must run
# with no mirror and no network beyond PyPI).
import re
import shlex
import sys

from pmd_bench.datasets.registry import DATASETS
from pmd_bench.datasets.settings import resolve_settings

_DATASETS_CONFIG = config["datasets"]
_DATA_SETTINGS = resolve_settings(_DATASETS_CONFIG)
_DATA_CLI = " ".join(
    shlex.quote(part)
    for part in [
        sys.executable, "-m", "pmd_bench.datasets", "--data-dir", str(_DATA_SETTINGS.data_dir),
        *(["--mirror", str(_DATA_SETTINGS.mirror)] if _DATA_SETTINGS.mirror else []),
    ]
)


def _dataset_pattern(corpus):
    """The names of the corpora (written as directories) or of the other datasets (.npz), as a regex."""
    return "|".join(re.escape(name) for name, entry in DATASETS.items() if entry.corpus == corpus)


def _prepare_options(wildcards):
    """config datasets.options.<name> as `prepare <name>` flags: {train_size: 10} -> --train-size 10."""
    options = _DATASETS_CONFIG["options"].get(wildcards.dataset, {})
    return " ".join(
        f"--{key.replace('_', '-')} {shlex.quote(str(value))}" for key, value in options.items() if value is not None
    )


DATASET_TARGETS = [
    f"{RESULTS}/data/{DATASETS[name].output_name}"
    for name in _DATASETS_CONFIG["prepare"]
    + (_DATASETS_CONFIG["prepare_with_mirror"] if _DATA_SETTINGS.mirror else [])
]


for _corpus in (False, True):
    _output = f"{RESULTS}/data/{{dataset}}"

    rule:
        name:
            "dataset_corpus" if _corpus else "dataset_file"
        output:
            directory(_output) if _corpus else f"{_output}.npz",
        wildcard_constraints:
            dataset=_dataset_pattern(_corpus),
        params:
            options=_prepare_options,
        log:
            f"{RESULTS}/logs/datasets/{{dataset}}.json",
        threads: 1
        resources:
            **job_resources("dataset_corpus" if _corpus else "dataset_file", config),
        shell:
            f"{_DATA_CLI} prepare {{wildcards.dataset}} --out {{output:q}} {{params.options}} > {{log:q}}"
