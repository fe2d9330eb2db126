# Theorem 5's O(m^-1/2) rate, measured on the conjugate Gaussian model (an MLflow run of <prefix>/table1).
RATE = f"{RESULTS}/figures/rate.json"

ALL_TARGETS.append(RATE)


rule rate:
    input:
        config=ancient(RESOLVED_CONFIG),
        store=TRACKING_STORE,
    output:
        result=RATE,
        plot=f"{RESULTS}/figures/rate.png",
    params:
        particles=" ".join(map(str, config["rate"]["particles"])),
        seeds=config["rate"]["seeds"],
    log:
        f"{RESULTS}/logs/rate.log",
    threads: 1
    resources:
        **job_resources("rate", config),
    shell:
        PMD_BENCH + " --config {input.config} rate --particles {params.particles} --seeds {params.seeds} --out {output.result} > {log} 2>&1"
