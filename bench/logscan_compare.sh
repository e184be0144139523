#!/usr/bin/env bash
# The log scan side by side in one run, on one big MaxText-format log built here from a real CPU
# log (bench/make_big_log.py; not committed): `cat`, `grep -E` with the default error patterns,
# a Python `re` loop with the same patterns, the scanner alone (bench/scan_file: error patterns
# plus MaxText event lines, parsed), and `cvs metrics` end to end. Prints MB/s, peak RSS and the
# ratios to grep. Not a test: nothing is asserted.
#   bench/logscan_compare.sh [SIZE_MB (1024)] [BUILD_DIR (build)]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
size=${1:-1024}; build=${2:-$root/build}
work=$(mktemp -d /tmp/cvs-logscan.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/training.log
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $(date -u +%Y-%m-%d)"
steps=$(python3 "$root/bench/make_big_log.py" "$root/tests/data/logs/cpu_bs4_30steps.log" "$log" "$size")
bytes=$(stat -c %s "$log")
echo "log: $bytes bytes, $steps step lines"
# The default error patterns (lib/cvs/config/config.cpp) as POSIX ERE for grep: \d -> [0-9], (?m) dropped
# (grep matches per line anyway).
"$build/tools/cvs/cvs" config patterns | cut -f2 | sed -e 's/\\d/[0-9]/g' -e 's/(?m)//g' >"$work/patterns.ere"
cat "$log" >/dev/null  # into the page cache: every reader below reads from memory
row() {  # name, then the command; prints MB/s and peak RSS
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || true
  read -r secs rss < <(tail -n 1 "$work/time")
  python3 -c 'import sys; n,b,s,r=sys.argv[1:]; s=max(float(s),0.001); print(f"| {n} | {int(b)/1e6/s:,.0f} | {s:.2f} | {int(r)/1024:.0f} |")' \
    "$name" "$bytes" "$secs" "$rss" | tee -a "$work/rows"
}
echo
echo "| command | MB/s | seconds | peak RSS (MiB) |"
echo "|---|---|---|---|"
row 'cat > /dev/null' cat "$log"
row 'LC_ALL=C grep -c -E -f (default patterns)' env LC_ALL=C grep -c -E -f "$work/patterns.ere" "$log"
row 'scanner alone (bench/scan_file)' "$build/bench/scan_file" "$log"
row 'cvs metrics LOG' "$build/tools/cvs/cvs" metrics "$log"
# Python on the first 10 % (a full pass takes minutes); its MB/s is of that part.
head -c $((bytes / 10)) "$log" >"$work/part.log"
part=$(stat -c %s "$work/part.log")
/usr/bin/time -f "%e %M" -o "$work/time" python3 - "$work/patterns.ere" "$work/part.log" <<'PY' >/dev/null
import re, sys
rx = re.compile("|".join("(?:%s)" % p.strip() for p in open(sys.argv[1]) if p.strip()), re.I)
n = 0
with open(sys.argv[2], errors="replace") as f:
    for line in f:
        if rx.search(line):
            n += 1
print(n)
PY
read -r secs rss < <(tail -n 1 "$work/time")
python3 -c 'import sys; b,s,r=sys.argv[1:]; s=max(float(s),0.001); print(f"| Python re loop (first 10 %) | {int(b)/1e6/s:,.0f} | {s:.2f} | {int(r)/1024:.0f} |")' "$part" "$secs" "$rss" | tee -a "$work/rows"
echo
python3 - "$work/rows" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    rows[cells[0]] = float(cells[1].replace(",", ""))
grep = rows["LC_ALL=C grep -c -E -f (default patterns)"]
for name in ("scanner alone (bench/scan_file)", "cvs metrics LOG"):
    print(f"{name}: {rows[name] / grep:.2f}x grep -E")
PY
