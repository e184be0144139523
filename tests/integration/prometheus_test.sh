#!/usr/bin/env bash
# Prometheus for real: Debian's prometheus-pushgateway and prometheus, started here on free
# loopback ports (Prometheus scraping the Pushgateway every second; the Pushgateway persists to the
# test folder, not Debian's default /var/lib/prometheus/pushgateway.data), stopped after. A real CPU
# session (training only) writes --openmetrics and pushes --pushgateway; `promtool check metrics`
# accepts the textfile; a PromQL query over Prometheus' HTTP API returns the session's tokens/s (the
# estimate in its results.json) and its gate outcome. The session's results history is a PostgreSQL
# server nobody listens for: the session says so in one line, and its verdict, exit code and
# results folder are as they would be.
#   prometheus_test.sh SUITE_BINARY BASE_CONFIG OUT_DIR
set -euo pipefail
suite=$1; base=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
skip() { [[ "${CI:-}" == "true" ]] && fail "$* (tools/setup installs it; CI never skips this)"; echo "SKIPPED: $*"; exit 77; }
for b in prometheus prometheus-pushgateway promtool curl; do
  command -v $b >/dev/null || skip "$b not installed (apt install prometheus prometheus-pushgateway curl)"
done
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pg_port=$(free_port); prom_port=$(free_port); dead_port=$(free_port)
prometheus-pushgateway --web.listen-address="127.0.0.1:$pg_port" --persistence.file="$out/pushgateway.data" >"$out/pushgateway.log" 2>&1 &
pgw=$!
cat >"$out/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{targets: ["127.0.0.1:$pg_port"]}]
EOF
prometheus --config.file="$out/prometheus.yml" --storage.tsdb.path="$out/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$out/prometheus.log" 2>&1 &
prom=$!
trap 'kill $pgw $prom 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$pg_port/-/ready" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$pg_port/-/ready" >/dev/null || fail "the Pushgateway did not start: $(tail -3 "$out/pushgateway.log")"

python3 - "$base" "$out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["smoke"]["enabled"] = False
c["checkpoint_resume"]["enabled"] = False
c["runs"] = ["BS=2,PRECISION=BF16,SL=128"]
json.dump(c, open(f"{sys.argv[2]}/config.json", "w"), indent=1)
PY
cp "$(dirname "$base")/../thresholds/$(basename "${base%.json}")_threshold.json" "$out/"
rc=0
"$suite" --config "$out/config.json" --output "$out/session" --quiet --poll-interval-s 1 --history "postgresql://cvs@127.0.0.1:$dead_port/cvs" \
  --openmetrics "$out/cvs.prom" --pushgateway "http://127.0.0.1:$pg_port" \
  '--gtest_filter=test_setup*:sweep/test_training_run*:sweep/test_metric*' >"$out/session.log" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || { tail -30 "$out/session.log"; fail "the session ended with exit $rc"; }
[[ $(grep -c "^cvs: history not written: .* (the verdict, the exit code and the results folder are as they were)$" \
      "$out/session.log") == 1 ]] \
  || fail "an unreachable store is not said in one line: $(grep 'cvs: ' "$out/session.log")"
for f in results.json report.html junit.xml; do [[ -s "$out/session/$f" ]] || fail "no $f beside an unreachable store"; done
grep -q "cvs: pushed  http://127.0.0.1:$pg_port" "$out/session.log" || fail "no push said: $(grep 'cvs: ' "$out/session.log")"
promtool check metrics <"$out/cvs.prom" >"$out/promtool.log" 2>&1 || fail "promtool check metrics: $(cat "$out/promtool.log")"

want=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sweeps"]["BS=2,PRECISION=BF16,SL=128"]
print(s["steady_state"]["intervals"]["tokens_per_sec_per_gpu"]["estimate"])' "$out/session/results.json")
query() { curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"; }
got=""
for _ in $(seq 1 120); do
  got=$(query 'cvs_maxtext_tokens_per_second_per_gpu{config="config",sweep="BS=2,PRECISION=BF16,SL=128"}' 2>/dev/null |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(" ".join(x["value"][1] for x in r))' 2>/dev/null || true)
  [[ -n "$got" ]] && break
  sleep 0.5
done
[[ -n "$got" ]] || fail "Prometheus never returned the session's tokens/s: $(tail -3 "$out/prometheus.log")"
pushed=$(curl -sf "http://127.0.0.1:$pg_port/metrics" | grep "^cvs_maxtext_tokens_per_second_per_gpu{" || true)
[[ $(grep -c . <<<"$pushed") == 1 && "$got" != *" "* ]] \
  || fail "one session, one tokens/s series expected; the Pushgateway holds: $pushed; Prometheus: $got"
python3 -c 'import sys; g,w=map(float,sys.argv[1:]); assert abs(g-w) <= 1e-9*abs(w), (g,w)' "$got" "$want" \
  || fail "Prometheus has tokens/s $got, the session $want"
status=$(query 'cvs_maxtext_session_passed{config="config"}' |
         python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["metric"]["status"], r[0]["value"][1])')
[[ $status == "PASS 1" ]] || fail "the session's outcome in Prometheus: '$status'"
echo "Prometheus: tokens/s $got (results.json $want), session $status; promtool: $(tr '\n' ' ' <"$out/promtool.log")"
echo "1 passed, 0 failed"
