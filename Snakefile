# pmd-bench: `snakemake --cores N` reproduces the paper's figures at smoke size from
# workflow/config/default.yaml (its measured time: the README's config-times block); `--configfile
# workflow/config/standard.yaml` runs the former, larger default and `--configfile
# workflow/config/paper.yaml` the paper's full settings.
from snakemake.utils import validate

# The default config applies only when none is given: Snakemake deep-merges config files, which
# would add the default's methods to any other config's.
if not config:

    configfile: "workflow/config/default.yaml"


validate(config, "workflow/schemas/config.schema.json")
# Every method entry checked against its class before any job: an unknown method, a misspelt
# hyperparameter or a method on a target it does not handle stops the workflow here, naming it. A
# method given as `path/to/file.py:Class` is found from the folder of the config file naming it.
from pmd_bench.workflow.config import method_files_from
from pmd_bench.workflow.methods import check_config

check_config(method_files_from(config, workflow.configfiles))

RESULTS = config["results_dir"]


include: "workflow/rules/common.smk"
include: "workflow/rules/tracking.smk"
include: "workflow/rules/datasets.smk"
include: "workflow/rules/mixture.smk"
include: "workflow/rules/logistic.smk"
include: "workflow/rules/rate.smk"
include: "workflow/rules/posteriordb.smk"
include: "workflow/rules/sparse_gp.smk"
include: "workflow/rules/lda.smk"
include: "workflow/rules/custom.smk"
include: "workflow/rules/table1.smk"
include: "workflow/rules/regress.smk"
include: "workflow/rules/tuning.smk"
include: "workflow/rules/cost.smk"

include: "workflow/rules/report.smk"

rule all:
    default_target: True
    input:
        ALL_TARGETS + DATASET_TARGETS,
