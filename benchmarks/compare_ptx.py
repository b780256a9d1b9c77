"""Which kernels' PTX differs between two builds' caches (build_for_device.sh's .device/cache,
or any TILE_CACHE_DIR): a compiler change meant for one kernel should leave the others'
PTX byte-identical.

    python3 benchmarks/compare_ptx.py .deviceA/cache .device/cache

Cache entries are grouped by what identifies a launch to the reader (kernel name, target,
options, argument specialization, threads); the set of PTX hashes in each group is compared,
since constexpr values are in the cache key but not in the metadata.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from collections import defaultdict


def groups(cache: str) -> dict:
    out = defaultdict(set)
    for entry in os.listdir(cache):
        meta, ptx = (os.path.join(cache, entry, f) for f in ("metadata.json", "stage-ptx.ptx"))
        if not (os.path.exists(meta) and os.path.exists(ptx)):
            continue
        m = json.load(open(meta))
        key = (m["name"], m["target"], json.dumps(m["options"], sort_keys=True), json.dumps(m["args"]), m["num_threads"])
        out[key].add(hashlib.md5(open(ptx, "rb").read()).hexdigest())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    a, b = groups(args.a), groups(args.b)
    same = [k for k in a if k in b and a[k] == b[k]]
    print(f"{len(same)} launch groups identical")
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            where = "only in A" if k not in b else "only in B" if k not in a else "differs"
            print(f"{where}: {k[0]} {k[1]} {k[2]} threads={k[4]}")


if __name__ == "__main__":
    main()
