"""Summarize an `ncu --page source --print-source sass --csv` report (see quantized_profile.py):
the share of each warp-stall reason over all samples, then the SASS instructions with the most
samples, each with its main stall reason.

    python3 benchmarks/ncu_stalls.py src_fp8.csv [--top 25]
"""

from __future__ import annotations

import csv
import sys


def _num(s: str) -> float:
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def main() -> None:
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 25
    lines = open(path).read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"Address"'))
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], rows[1:]
    col = {h: i for i, h in enumerate(header)}
    samples = col["Warp Stall Sampling (All Samples)"]
    total = sum(_num(r[samples]) for r in data) or 1.0
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    print(f"{total:.0f} samples")
    for h, v in sorted(((h, sum(_num(r[col[h]]) for r in data)) for h in reasons), key=lambda x: -x[1])[:10]:
        print(f"{h:28s} {v / total:6.1%}")
    for r in sorted(data, key=lambda r: -_num(r[samples]))[:top]:
        main_reason = max(reasons, key=lambda h: _num(r[col[h]]))
        print(f"{_num(r[samples]) / total:6.1%}  {r[col['Source']][:72]:72s} {main_reason}")


if __name__ == "__main__":
    main()
