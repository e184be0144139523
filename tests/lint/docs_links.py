#!/usr/bin/env python3
"""The README and docs/ name only what exists.

Every relative Markdown link resolves to a file (and its #anchor to a heading of that page); every
repository path in backticks (`lib/...`, `tests/...`, ...) exists (a `*` is a glob); every `cvs SUB`
names a subcommand `cvs --help` lists. Usage: docs_links.py REPO_ROOT CVS_BINARY. Exit 1 listing
each dead name with its file and line.
"""
import glob
import os
import re
import subprocess
import sys

TOP = ("lib/", "tools/", "tests/", "configs/", "thresholds/", "bench/", "docs/", "suites/",
       "fixtures/", "reports/", "cmake/", "packaging/", ".ci/")


def anchors(path):
    """GitHub's anchors of a Markdown page's headings."""
    out, fence = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and line.startswith("#"):
                text = line.lstrip("#").strip().lower()
                text = re.sub(r"[^\w\- ]", "", text)
                out.add(text.replace(" ", "-"))
    return out


def subcommands(cvs):
    text = subprocess.run([cvs, "--help"], capture_output=True, text=True, check=False).stdout
    return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]+)\b", text, re.M)}


def repo_path_exists(root, token):
    token = re.sub(r"(:\d+(-\d+)?|:|'s)$", "", token)  # file:LINE, a sentence's colon or 's
    if any(c in token for c in "<>{}$ ") or "..." in token:
        return True  # a pattern, not a path
    full = os.path.join(root, token)
    if "*" in token:
        return bool(glob.glob(full))
    # a module (lib/cvs/fleet/fleet: its .hpp/.cpp) or a program built from one (bench/scan_file)
    return os.path.exists(full) or bool(glob.glob(full + ".*"))


def check_page(root, page, commands):
    dead = []
    here = os.path.dirname(page)
    fence = False
    with open(page, encoding="utf-8") as f:
        lines = f.readlines()
    for number, line in enumerate(lines, 1):
        where = f"{os.path.relpath(page, root)}:{number}"
        if line.startswith("```"):
            fence = not fence
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(here, path)) if path else page
            if not os.path.exists(full):
                dead.append(f"{where}: link to {target}: no such file")
            elif anchor and full.endswith(".md") and anchor not in anchors(full):
                dead.append(f"{where}: link to {target}: no heading #{anchor} in {path or 'this page'}")
        spans = re.findall(r"`([^`]+)`", line) if not fence else [line.strip()]
        for span in spans:
            for token in span.split():
                token = token.strip("(),;'\"")
                if token.startswith(TOP) and not repo_path_exists(root, token):
                    dead.append(f"{where}: `{token}` does not exist in the repository")
            words = span.split()
            if len(words) >= 2 and words[0] == "cvs" and re.match(r"^[a-z][a-z-]+$", words[1]):
                if words[1] not in commands:
                    dead.append(f"{where}: `cvs {words[1]}` is no cvs command (cvs --help)")
    return dead


def self_test(cvs):
    """The checker finds each kind of dead name in a page made for it (a check that cannot fail
    would pass every page)."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs", "a.md"), "w", encoding="utf-8") as f:
            f.write("# A\n\n[gone](b.md) [bad anchor](a.md#nowhere) [ok](a.md#a)\n"
                    "`lib/cvs/no_such_file.cpp` and `cvs frobnicate --now` and `cvs run`\n")
        with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
            f.write("[docs](docs/a.md)\n")
        dead = check_page(root, os.path.join(root, "docs", "a.md"), subcommands(cvs))
        dead += check_page(root, os.path.join(root, "README.md"), subcommands(cvs))
    expected = ["link to b.md", "no heading #nowhere", "lib/cvs/no_such_file.cpp", "cvs frobnicate"]
    missed = [e for e in expected if not any(e in d for d in dead)]
    if missed or len(dead) != len(expected):
        print(f"self-test: expected {expected}, got {dead}")
        return False
    return True


def main():
    root, cvs = sys.argv[1], sys.argv[2]
    if not self_test(cvs):
        return 1
    commands = subcommands(cvs)
    if "run" not in commands:
        print(f"cannot read the commands of {cvs} --help")
        return 1
    pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    dead = [d for page in pages for d in check_page(root, page, commands)]
    for d in dead:
        print(d)
    print(f"docs_links: {len(pages)} pages, {len(dead)} dead name(s)")
    return 1 if dead else 0


if __name__ == "__main__":
    sys.exit(main())
