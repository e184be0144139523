#!/usr/bin/env bash
# Renders the HTML report of a real CPU session (tests/data/results) with `cvs report`, loads it
# in headless Chromium, checks that it rendered (title, verdict, tables, inline SVG plots, no
# console errors, no network request) and saves a screenshot in the test output folder.
#   chromium_report_test.sh CVS_BINARY RESULTS_JSON OUT_DIR
set -euo pipefail
cvs=$1; results=$2; out=$3
mkdir -p "$out"
html="$out/report.html"
"$cvs" report "$results" --out "$html" >/dev/null
source "$(dirname "$0")/chromium_lib.sh" "$out"
# --dump-dom prints the DOM after load; --enable-logging=stderr surfaces console errors.
dump_dom "$html"
grep -q '<title>jaxmaxtext_single PASS</title>' "$out/dom.html" || fail "title missing"
grep -q 'jaxmaxtext_single: PASS' "$out/dom.html" || fail "verdict header missing"
[[ $(grep -o '<svg' "$out/dom.html" | wc -l) -ge 4 ]] || fail "expected a loss curve and a step-time plot per sweep"
[[ $(grep -o '<polyline class="loss"' "$out/dom.html" | wc -l) -ge 2 ]] || fail "loss curves missing"
grep -q 'training.tokens_per_sec_per_gpu' "$out/dom.html" || fail "metric table missing"
if grep -E 'CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|net::ERR' "$out/console.log" | grep -v dbus; then fail "console errors"; fi
if grep -Eo '(src|href)="https?://' "$html"; then fail "the report must not load anything from the network"; fi
# At 1280 px the page must not scroll sideways: a page beside the report loads it in a 1280 px frame
# and writes whether its content is wider than the frame.
cat >"$out/width.html" <<'HTML'
<!DOCTYPE html><html><body><iframe id="r" src="report.html" style="width:1280px;height:800px;border:0"></iframe>
<script>
document.getElementById("r").addEventListener("load", function () {
  var d = this.contentDocument.documentElement;
  document.body.setAttribute("data-width", d.scrollWidth + " of " + d.clientWidth);
});
</script></body></html>
HTML
width=$(chromium_headless --allow-file-access-from-files --virtual-time-budget=3000 --dump-dom \
  "file://$out/width.html" 2>/dev/null | grep -o 'data-width="[0-9]* of [0-9]*"' | grep -o '[0-9][0-9]* of [0-9]*' || true)
[[ -n "$width" ]] || fail "could not measure the page width"
read -r content _ frame <<<"$width"
((content <= frame)) || fail "at 1280 px the page is $content px wide for a $frame px frame: it scrolls sideways"
chromium_headless --hide-scrollbars --window-size=1280,2200 --screenshot="$out/report.png" "file://$html" 2>/dev/null
[[ -s "$out/report.png" ]] || fail "no screenshot"
[[ $(head -c 8 "$out/report.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "screenshot is not a PNG"
echo "report rendered ($content px wide in a $frame px frame); screenshot $out/report.png"
echo "1 passed, 0 failed"
