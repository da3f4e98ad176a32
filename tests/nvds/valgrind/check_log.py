"""Reads a valgrind memcheck log of harness.py and says whether obbmeta.nvds leaked or misused memory.

Stricter than valgrind's own "definitely lost": a forgotten NvDsBatchMeta is a cycle of pools and lists that
valgrind may file under "possibly lost" or "indirectly lost". So every loss record (any kind) whose allocation
stack passes through NVIDIA's libnvds_meta / libnvdsgst_meta or obbmeta's _nvdsmeta is a failure, except the
one-time GType / GstMetaInfo registration of NvDsMeta (still reachable by design). Errors (invalid reads/writes,
uninitialised values) are failures whatever their stack, after python.supp.
Usage: python check_log.py LOG   -> exit 0 (clean) or 1 (prints the offending records).
"""
from __future__ import annotations

import re
import sys

OURS = re.compile(r"libnvds_meta\.so|libnvdsgst_meta\.so|_nvdsmeta\.")
ONE_TIME = re.compile(r"nvds_meta_get_info|nvds_meta_api_get_type")


def problems(log: str) -> list[str]:
    out = []
    summary = re.search(r"ERROR SUMMARY: (\d+) errors", log)
    if summary is None:
        return ["no ERROR SUMMARY in the log (did valgrind run to the end?)"]
    blocks = re.split(r"\n==\d+== \n", log)
    for block in blocks:
        if "loss record" in block:
            if OURS.search(block) and not ("still reachable" in block and ONE_TIME.search(block)):
                out.append(block)
        elif re.search(r"Invalid (read|write|free)|uninitialised|Mismatched free|overlap", block):
            out.append(block)
    if int(summary.group(1)) != 0:
        out.append(f"valgrind reported {summary.group(1)} unsuppressed errors")
    return out


def main() -> int:
    log = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    found = problems(log)
    for block in found:
        print(block[:3000], "\n----")
    print(f"check_log: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
