#!/usr/bin/env python3
"""tools/gpu-validate-report.py on logs as tools/gpu-validate.sh leaves them (gpu-validate-logs/: a
JUnit file from ctest with a passed, a failed and a skipped test, and scan-gpu-bench's JSON and
table from the H200 run of 2026-11-25, two rows kept; bench-bf16.* and goldens-bf16.log: a made-up
run of the bf16 package, in the tools' formats, with a failed golden; bench-nostash.*: a made-up
run with the stash off; gpu-validate-sweep/: a made-up sweep of forced plans, one with a refused
case, one failed): the report counts and lists the tests, shows the failed test's output, carries the
benchmark's table and every row into the JSON, says where the kernels came from, and adds the bf16
package's, the stash-off run's and the forced plans' sections only when asked or present.
usage: gpu_validate_report_test.py REPORT_SCRIPT LOGS_DIR WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys


def main():
    script, logs, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    package = os.path.join(work, "pkg")
    os.makedirs(package)
    with open(os.path.join(package, "source-commit"), "w") as f:
        f.write("76dd177\n")
    out = os.path.join(work, "report")
    for bench_rc, expect in ((0, "the column \"predicted (model)\" is the performance model's prediction"),
                             (77, "No GPU: nothing was measured."), (1, "The benchmark failed:")):
        subprocess.run([sys.executable, script, "--package", package, "--logs", logs, "--tests-rc", "8",
                        "--bench-rc", str(bench_rc), "--peers", "not run (--no-peers)", "--out", out], check=True)
        with open(out + ".md") as f:
            md = f.read()
        assert expect in md, (bench_rc, md)
    with open(out + ".json") as f:
        report = json.load(f)

    assert "## ctest -L gpu: 1 passed, 1 failed, 1 skipped (exit 8)" in md, md
    assert "| cuda_package_goldens | failed | 7.0 |" in md, md
    assert "### cuda_package_goldens (failed)" in md and "backward 'B.grad' relative error 3.1e-4 > 1e-5" in md, md
    assert "kernels generated at: 76dd177" in md, md
    statuses = {c["name"]: c["status"] for c in report["tests"]["cases"]}
    assert statuses == {"cuda_gpu_smoke": "passed", "cuda_package_goldens": "failed",
                        "scan_gpu_bench_smoke": "skipped"}, statuses
    assert report["package_commit"] == "76dd177", report["package_commit"]
    rows = report["bench"]["result"]["rows"]
    assert [r["pass"] for r in rows] == ["forward", "forward+backward"], rows
    assert rows[0]["predicted"]["ms"] > 0 and rows[0]["peers"]["log-space compiled"] > 0, rows[0]

    def passing_report(*extra):
        """The report of a run whose tests and benchmark passed, with `extra` arguments: (md, json)."""
        subprocess.run([sys.executable, script, "--package", package, "--logs", logs, "--tests-rc", "0", "--bench-rc", "0",
                        "--peers", "run", *extra, "--out", out], check=True)
        with open(out + ".md") as f, open(out + ".json") as j:
            return f.read(), json.load(j)

    md, report = passing_report()
    assert "| mingru | f32 | B=64 T=4096 d=1024 | sequential L=4096 | forward | 2.302 |" in md, md
    assert "bf16 package" not in md and "bf16" not in report, md
    assert "without the kernels' stash" not in md, md

    md, report = passing_report("--nostash-bench-rc", "0")
    assert "## The same without the kernels' stash (scan-gpu-bench --stash off; exit 0)" in md, md
    assert "| mingru | f32 | B=8 T=16384 d=1024 | chunked L=128 | forward+backward | 1.950 |" in md, md
    assert md.index("| sequential L=4096 |") < md.index("| chunked L=128 |"), md
    assert [r["plan"] for r in report["without_stash"]["result"]["rows"]] == ["chunked L=128"] * 2, report

    md, report = passing_report("--bf16-goldens-rc", "1", "--bf16-bench-rc", "0")
    assert "golden vectors (exit 1), scan-gpu-bench (exit 0)" in md, md
    assert "FAIL backward k.grad: relative error 3.00e-02 (bound 1.00e-02)" in md, md
    assert "| mingru | bf16 | B=64 T=4096 d=1024 | sequential L=64 | forward | 1.500 |" in md, md
    assert md.index("| mingru | f32 |") < md.index("| mingru | bf16 |"), md
    assert report["bf16"]["goldens"]["exit_code"] == 1, report["bf16"]
    assert [r["dtype"] for r in report["bf16"]["bench"]["result"]["rows"]] == ["bf16", "bf16"], report["bf16"]
    assert "## Forced plans" not in md and "forced_plans" not in report, md

    # Step 3c's sweep (gpu-validate-sweep/, beside the logs): sweep.tsv names each forced plan's
    # files and exit code; the first has a refused case, the second failed.
    sweep_logs = os.path.join(work, "logs")
    shutil.copytree(logs, sweep_logs)
    sweep = os.path.join(os.path.dirname(os.path.abspath(logs)), "gpu-validate-sweep")
    for name in os.listdir(sweep):
        shutil.copy(os.path.join(sweep, name), sweep_logs)
    subprocess.run([sys.executable, script, "--package", package, "--logs", sweep_logs, "--tests-rc", "0", "--bench-rc", "0",
                    "--peers", "run", "--out", out], check=True)
    with open(out + ".md") as f, open(out + ".json") as j:
        md, report = f.read(), json.load(j)
    assert "## Forced plans (scan-gpu-bench --strategy --chunk --stash)" in md, md
    assert "### f32 chunked L=32 stash on (exit 0)" in md and "### bf16 sequential L=64 stash on (exit 1)" in md, md
    assert "| minlstm | – | B=64 T=4096 d=1024 | refused: minlstm: chunk length 32" in md, md
    assert "launching sf_mingru_seq: out of memory" in md, md
    assert md.index("## scan-gpu-bench") < md.index("## Forced plans"), md
    runs = report["forced_plans"]
    assert [(r["label"], r["exit_code"]) for r in runs] == [("f32 chunked L=32 stash on", 0), ("bf16 sequential L=64 stash on", 1)], runs
    assert runs[0]["result"]["rows"][1]["refused"].startswith("minlstm: chunk length 32"), runs[0]
    assert runs[1]["result"] is None and "out of memory" in runs[1]["stderr"], runs[1]
    print("gpu-validate report: passed")


if __name__ == "__main__":
    main()
