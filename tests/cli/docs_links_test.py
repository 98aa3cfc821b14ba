#!/usr/bin/env python3
"""Every relative link of README.md, CHANGELOG.md and docs/*.md leads somewhere: the file or
directory exists, and a #fragment names a heading of the Markdown page it points into (GitHub's
anchor rule).

The idea not to miss: the README is a guide that points into docs/, so a page renamed or a
heading reworded must fail here, not leave a reader at a dead link. Links inside code blocks
are text, not links, and are not checked; absolute URLs are not fetched.

usage: docs_links_test.py SOURCE_DIR
"""
import glob
import os
import re
import sys

SRC = os.path.realpath(sys.argv[1]) if len(sys.argv) > 1 else os.getcwd()
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def without_fences(text):
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation but - and _ dropped (a code span's
    backticks too, its text kept), spaces to -."""
    out = set()
    for line in without_fences(open(path, encoding="utf-8").read()).splitlines():
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return out


pages = [os.path.join(SRC, "README.md"), os.path.join(SRC, "CHANGELOG.md")]
pages += sorted(glob.glob(os.path.join(SRC, "docs", "*.md")))
broken, checked = [], 0
for page in pages:
    text = without_fences(open(page, encoding="utf-8").read())
    for target in LINK.findall(text):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        checked += 1
        path, _, fragment = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = os.path.relpath(page, SRC)
        if not os.path.exists(full):
            broken.append(f"{where}: {target}: no such file or directory")
        elif fragment and full.endswith(".md") and fragment not in anchors(full):
            broken.append(f"{where}: {target}: no heading with anchor #{fragment}")
for line in broken:
    print(f"FAIL: {line}")
if not checked:
    sys.exit("FAIL: no relative link found: the extraction is broken")
print(f"{len(pages)} pages, {checked} relative links, {len(broken)} broken")
sys.exit(1 if broken else 0)
