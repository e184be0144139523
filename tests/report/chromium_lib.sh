# Sourced by the Chromium page tests with the output folder: fail(), and headless Chromium as
# `chromium_headless ARGS...` (its own profile in the folder). dump_dom PAGE writes the DOM after
# load to <out>/dom.html and the console (--enable-logging=stderr) to <out>/console.log.
#   source "$(dirname "$0")/chromium_lib.sh" "$out"
# shellcheck shell=bash
chromium_out=$1
fail() {
  echo "FAIL: $*"
  exit 1
}
chromium_browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n "$chromium_browser" ]] || fail "chromium not installed (tools/setup installs it)"
chromium_headless() {
  "$chromium_browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$chromium_out/profile" "$@"
}
dump_dom() {
  chromium_headless --enable-logging=stderr --v=0 --dump-dom "file://$1" >"$chromium_out/dom.html" \
    2>"$chromium_out/console.log"
}
