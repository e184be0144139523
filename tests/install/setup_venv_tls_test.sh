#!/usr/bin/env bash
# Behind a proxy that re-signs TLS, `cvs setup-venv` names the TLS failure and its fix (PIP_CERT,
# --wheels), never only pip's "No matching distribution found". A real TLS server on a loopback
# port (openssl s_server, a throw-away self-signed certificate) stands where the index would be.
#   setup_venv_tls_test.sh SOURCE_ROOT OUT_DIR
set -euo pipefail
src=$1; out=$2
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
command -v openssl >/dev/null || { echo "openssl not installed"; exit 77; }
py=$("$src/tools/setup-venv" --print-python 2>/dev/null) || { echo "no Python >= 3.12 here (tools/setup)"; exit 77; }
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$out/key.pem" -out "$out/cert.pem" -days 1 \
  -subj "/CN=not-the-index" >/dev/null 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl s_server -quiet -accept "127.0.0.1:$port" -cert "$out/cert.pem" -key "$out/key.pem" -www \
  >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
rc=0
PIP_INDEX_URL="https://127.0.0.1:$port/simple" PIP_RETRIES=0 PIP_TIMEOUT=5 PIP_DISABLE_PIP_VERSION_CHECK=1 \
  "$src/tools/setup-venv" --venv "$out/venv" --python "$py" --force >"$out/setup.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || { cat "$out/setup.log"; fail "exit $rc, expected 1"; }
grep -q "could not verify the package index's TLS certificate" "$out/setup.log" || { cat "$out/setup.log"; fail "the TLS failure is not named"; }
grep -q "PIP_CERT=" "$out/setup.log" && grep -q -- "--wheels DIR" "$out/setup.log" || fail "the fix is not said"
echo "PASS: $(grep -c . "$out/setup.log") lines; the TLS failure named with PIP_CERT and --wheels"
