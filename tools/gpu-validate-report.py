#!/usr/bin/env python3
"""Writes tools/gpu-validate.sh's report, REPORT.{md,json}, from what it left in its logs
directory: ctest.xml (ctest --output-junit), bench.json and bench.md (scan-gpu-bench --json and its
table), bench.err. Standard library only: the GPU machine may have nothing else."""
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", required=True)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--tests-rc", type=int, required=True)
    parser.add_argument("--bench-rc", type=int, required=True)
    parser.add_argument("--peers", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    gpu = command_output("nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
    repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = command_output("git", "-C", repository, "rev-parse", "HEAD")
    package_commit = (read(os.path.join(args.package, "source-commit")) or "").strip() or None
    tests = tests_from_junit(os.path.join(args.logs, "ctest.xml"))
    bench = json.loads(read(os.path.join(args.logs, "bench.json")) or "null")
    bench_table = read(os.path.join(args.logs, "bench.md")) or ""
    bench_err = (read(os.path.join(args.logs, "bench.err")) or "")[-4000:]
    predictions = os.path.join(args.package, "predictions.json")

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
    if args.bench_rc == 0:
        lines += ["Measured on this GPU; the column \"predicted (model)\" is the performance model's prediction "
                  "(docs/cuda.md), not a measurement.", "", bench_table.rstrip()]
    elif args.bench_rc == 77:
        lines += ["No GPU: nothing was measured.", "", "```", (bench_table + bench_err).rstrip(), "```"]
    else:
        lines += ["The benchmark failed:", "", "```", bench_err.rstrip(), "```"]
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
