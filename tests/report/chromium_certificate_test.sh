#!/usr/bin/env bash
# Renders the page of a real certification (tests/data/results/certify_degraded/certificate.json:
# cvs certify on the four netns hosts with one host CPU-capped and one link limited) with
# `cvs report`, loads it in headless Chromium, checks that it rendered (the verdict first, the
# excluded nodes, the tiers, the ladder; no console errors, no network request) and saves a
# screenshot in the test output folder (the README's docs/certificate.png).
#   chromium_certificate_test.sh CVS_BINARY CERTIFICATE_JSON OUT_DIR
set -euo pipefail
cvs=$1; cert=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
html="$out/certificate.html"
"$cvs" report "$cert" --out "$html"
source "$(dirname "$0")/chromium_lib.sh" "$out"
dump_dom "$html"
grep -q '<title>cvs certify: CERTIFIED</title>' "$out/dom.html" || fail "title missing"
python3 - "$out/dom.html" <<'PY' || fail "page content"
import sys
d = open(sys.argv[1]).read()
order = [d.index(s) for s in ('class="verdict"', "<h2>Excluded</h2>", "<h2>Tiers</h2>", "<h2>Scaling ladder</h2>", "<h2>Inputs</h2>")]
assert order == sorted(order), order
for node in ("ns-b", "ns-d"):
    assert f'<tr class="bad"><td>{node}</td>' in d, node
assert d.count("<tr><td>") >= 4
PY
if grep -E 'CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|net::ERR' "$out/console.log" | grep -v dbus; then fail "console errors"; fi
if grep -Eo '(src|href)="https?://' "$html"; then fail "the page must not load anything from the network"; fi
chromium_headless --hide-scrollbars --window-size=1280,1100 --screenshot="$out/certificate.png" "file://$html" 2>/dev/null
[[ -s "$out/certificate.png" ]] || fail "no screenshot"
[[ $(head -c 8 "$out/certificate.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "screenshot is not a PNG"
echo "certificate rendered; screenshot $out/certificate.png"
echo "1 passed, 0 failed"
