#!/usr/bin/env python3
"""Writes tools/gpu-validate.sh's report, REPORT.{md,json}, from what it left in its logs
directory: ctest.xml (ctest --output-junit), bench.json and bench.md (scan-gpu-bench --json and its
table), bench.err; with --nostash-bench-rc also bench-nostash.{json,md,err} (the same benchmark with
the kernels' stash off); with --bf16-bench-rc also the bf16 package's bench-bf16.{json,md,err} and
goldens-bf16.log (scan-package-run); where sweep.tsv is there (step 3c: a line "N<TAB>label<TAB>exit
code" per forced plan), each plan's bench-sweep-N.{json,md,err}. Standard library only: the GPU
machine may have nothing else."""
import argparse
import datetime
import json
import os
import socket
import subprocess
import xml.etree.ElementTree as ElementTree


def command_output(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def tests_from_junit(path):
    """[{name, status: passed | failed | skipped, seconds, output}] from ctest's JUnit file."""
    text = read(path)
    if text is None:
        return []
    cases = []
    for case in ElementTree.fromstring(text).iter("testcase"):
        status = {"run": "passed", "fail": "failed", "notrun": "skipped"}.get(case.get("status"), case.get("status"))
        if case.find("failure") is not None:
            status = "failed"
        out = case.findtext("system-out") or ""
        cases.append({"name": case.get("name"), "status": status, "seconds": float(case.get("time") or 0),
                      "output": out[-4000:]})
    return cases


def bench_section(rc, table, err):
    if rc == 0:
        return ["Measured on this GPU; the column \"predicted (model)\" is the performance model's prediction "
                "(docs/cuda.md), not a measurement.", "", table.rstrip()]
    if rc == 77:
        return ["No GPU: nothing was measured.", "", "```", (table + err).rstrip(), "```"]
    return ["The benchmark failed:", "", "```", err.rstrip(), "```"]


def forced_plans(logs):
    """[{label, exit_code, result, table, stderr}] of the sweep's runs, in sweep.tsv's order."""
    runs = []
    for line in (read(os.path.join(logs, "sweep.tsv")) or "").splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        number, label, rc = fields
        base = os.path.join(logs, f"bench-sweep-{number}")
        runs.append({"label": label, "exit_code": int(rc), "result": json.loads(read(base + ".json") or "null"),
                     "table": read(base + ".md") or "", "stderr": (read(base + ".err") or "")[-4000:]})
    return runs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", required=True)
    parser.add_argument("--predictions", help="the model's predictions the benchmark printed (default: PACKAGE/predictions.json)")
    parser.add_argument("--logs", required=True)
    parser.add_argument("--tests-rc", type=int, required=True)
    parser.add_argument("--bench-rc", type=int, required=True)
    parser.add_argument("--peers", required=True)
    parser.add_argument("--nostash-bench-rc", type=int, help="scan-gpu-bench --stash off (absent: not run)")
    parser.add_argument("--bf16-goldens-rc", type=int, help="scan-package-run on PACKAGE/bf16 (absent: no bf16 package)")
    parser.add_argument("--bf16-bench-rc", type=int, help="scan-gpu-bench on PACKAGE/bf16")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    bf16 = args.bf16_bench_rc is not None
    nostash = args.nostash_bench_rc is not None

    gpu = command_output("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
    repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = command_output("git", "-C", repository, "rev-parse", "HEAD")
    package_commit = (read(os.path.join(args.package, "source-commit")) or "").strip() or None
    tests = tests_from_junit(os.path.join(args.logs, "ctest.xml"))
    bench = json.loads(read(os.path.join(args.logs, "bench.json")) or "null")
    bench_table = read(os.path.join(args.logs, "bench.md")) or ""
    bench_err = (read(os.path.join(args.logs, "bench.err")) or "")[-4000:]
    predictions = args.predictions or os.path.join(args.package, "predictions.json")
    if nostash:
        bench_nostash = json.loads(read(os.path.join(args.logs, "bench-nostash.json")) or "null")
        bench_nostash_table = read(os.path.join(args.logs, "bench-nostash.md")) or ""
        bench_nostash_err = (read(os.path.join(args.logs, "bench-nostash.err")) or "")[-4000:]
    if bf16:
        bench_bf16 = json.loads(read(os.path.join(args.logs, "bench-bf16.json")) or "null")
        bench_bf16_table = read(os.path.join(args.logs, "bench-bf16.md")) or ""
        bench_bf16_err = (read(os.path.join(args.logs, "bench-bf16.err")) or "")[-4000:]
        goldens_bf16 = (read(os.path.join(args.logs, "goldens-bf16.log")) or "")[-8000:]

    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "gpu": gpu,
        "commit": commit,
        "package_commit": package_commit,
        "package": args.package,
        "predictions": predictions if os.path.exists(predictions) else None,
        "tests": {"exit_code": args.tests_rc, "cases": tests},
        "bench": {"exit_code": args.bench_rc, "peers": args.peers, "result": bench, "stderr": bench_err},
    }
    if nostash:
        result["without_stash"] = {"exit_code": args.nostash_bench_rc, "result": bench_nostash, "stderr": bench_nostash_err}
    if bf16:
        result["bf16"] = {"goldens": {"exit_code": args.bf16_goldens_rc, "output": goldens_bf16},
                          "bench": {"exit_code": args.bf16_bench_rc, "result": bench_bf16, "stderr": bench_bf16_err}}
    sweep = forced_plans(args.logs)
    if sweep:
        result["forced_plans"] = [{k: run[k] for k in ("label", "exit_code", "result", "stderr")} for run in sweep]
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")

    counts = {s: sum(1 for t in tests if t["status"] == s) for s in ("passed", "failed", "skipped")}
    lines = [
        "# GPU validation report (tools/gpu-validate.sh)",
        "",
        f"- date: {result['date']}",
        f"- host: {result['host']}; GPU: {gpu or 'nvidia-smi not found'}",
        f"- checkout: {commit or 'unknown (no git checkout)'}; kernels generated at: "
        f"{package_commit or 'unknown (no source-commit in the package)'}",
        f"- package: {args.package}; model predictions: {result['predictions'] or 'none (predictions.json missing)'}",
        "",
        f"## ctest -L gpu: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"(exit {args.tests_rc})",
        "",
        "| test | status | seconds |",
        "|---|---|---|",
    ]
    lines += [f"| {t['name']} | {t['status']} | {t['seconds']:.1f} |" for t in tests]
    for t in tests:
        if t["status"] == "failed":
            lines += ["", f"### {t['name']} (failed)", "", "```", t["output"].rstrip(), "```"]
    lines += ["", f"## scan-gpu-bench (exit {args.bench_rc}); peers: {args.peers}", ""]
    lines += bench_section(args.bench_rc, bench_table, bench_err)
    if nostash:
        lines += ["", f"## The same without the kernels' stash (scan-gpu-bench --stash off; exit "
                  f"{args.nostash_bench_rc}): the planner's plans with the stash left off, for each row's "
                  "comparison", ""]
        lines += bench_section(args.nostash_bench_rc, bench_nostash_table, bench_nostash_err)
    if bf16:
        lines += ["", f"## The bf16 package (PACKAGE/bf16, scanc --bf16-ports): golden vectors (exit "
                  f"{args.bf16_goldens_rc}), scan-gpu-bench (exit {args.bf16_bench_rc})", ""]
        if args.bf16_goldens_rc not in (0, 77):
            lines += ["scan-package-run failed:", "", "```", goldens_bf16.rstrip(), "```", ""]
        lines += bench_section(args.bf16_bench_rc, bench_bf16_table, bench_bf16_err)
    if sweep:
        lines += ["", "## Forced plans (scan-gpu-bench --strategy --chunk --stash): the chunk lengths and the stash "
                  "the planner chooses between, each at every case that can take it", ""]
        for run in sweep:
            lines += [f"### {run['label']} (exit {run['exit_code']})", ""]
            lines += bench_section(run["exit_code"], run["table"], run["stderr"]) + [""]
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
