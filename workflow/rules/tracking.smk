# The MLflow store is created once, before any run opens it (concurrent first opens of a fresh
# SQLite store corrupt its schema migration).


rule tracking_store:
    input:
        RESOLVED_CONFIG,
    output:
        f"{RESULTS}/.tracking-store",
    log:
        f"{RESULTS}/logs/tracking_store.log",
    shell:
        PMD_BENCH + " --config {input} init-store --marker {output} > {log} 2>&1"
