# The self-contained HTML report (reports/html_report.py): every experiment's figures and tables,
# the paper's claims beside them, the config, the commits and the MLflow runs. Included last: it
# depends on every other target of the config, so `snakemake --cores N` builds it at the end.
REPORT = f"{RESULTS}/report/index.html"
_REPORT_INPUTS = list(ALL_TARGETS)

ALL_TARGETS.append(REPORT)


rule report_html:
    input:
        config=RESOLVED_CONFIG,
        results=_REPORT_INPUTS,
    output:
        REPORT,
    log:
        f"{RESULTS}/logs/report_html.log",
    threads: 1
    resources:
        **job_resources("report_html", config),
    shell:
        PMD_BENCH + " --config {input.config} report-html --out {output} > {log} 2>&1"
