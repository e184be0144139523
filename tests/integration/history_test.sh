#!/usr/bin/env bash
# The results history on a real engine, through `cvs history`: SQLite (a store file here) or
# PostgreSQL (a throw-away cluster of Debian's postgresql, started here on a free loopback port as
# the postgres user, stopped after). The same checks on both: ingest, an idempotent re-ingest, the
# sessions' filters, a node's ledger, lemons, a trend whose one shift is found where the
# provenance changed, a writer killed inside its transaction losing nothing, two writers at once.
#   history_test.sh sqlite|postgresql CVS_BINARY OUT_DIR
set -euo pipefail
engine=$1; cvs=$2; out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
skip() { [[ "${CI:-}" == "true" ]] && fail "$* (tools/setup installs it; CI never skips this)"; echo "SKIPPED: $*"; exit 77; }

case $engine in
  sqlite) store="$out/history.sqlite" ;;
  postgresql)
    bin=$(printf "%s\n" /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    [[ -x "$bin/initdb" ]] || skip "no PostgreSQL server here (apt install postgresql)"
    id postgres >/dev/null 2>&1 || skip "no postgres user"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    pgdata=$(mktemp -d /tmp/cvs-pg.XXXXXX)
    chown postgres "$pgdata"
    trap 'su postgres -c "$bin/pg_ctl -D $pgdata -m immediate stop" >/dev/null 2>&1 || true; rm -rf "$pgdata"' EXIT
    su postgres -c "$bin/initdb -D $pgdata -A trust -U postgres" >"$out/initdb.log" 2>&1 || fail "initdb: $(tail -3 "$out/initdb.log")"
    su postgres -c "$bin/pg_ctl -D $pgdata -o '-p $port -k $pgdata -c listen_addresses=127.0.0.1' -l $pgdata/log -w start" \
      >"$out/pg_ctl.log" 2>&1 || fail "pg_ctl start: $(tail -3 "$pgdata/log")"
    su postgres -c "psql -h 127.0.0.1 -p $port -U postgres -qc 'CREATE DATABASE cvs'" || fail "createdb"
    store="postgresql://postgres@127.0.0.1:$port/cvs"
    ;;
  *) fail "engine $engine: sqlite or postgresql" ;;
esac
h() { "$cvs" history --history "$store" "$@"; }

# Sessions: 6 nights on gpu-01 (all PASS) and gpu-07 (FAIL every other night), then 24 nights of a
# second config whose tokens/s falls 11 % from night 13, when maxtext_version changes.
python3 - "$root/tests/data/results/cpu_single_results_current.json" "$out" <<'PY'
import json, os, random, sys
base = json.load(open(sys.argv[1])); out = sys.argv[2]
def session(name, day, node, ok=True, config=None, tok=None, version="0.2.5"):
    r = json.loads(json.dumps(base))
    r["started_at"] = f"2026-11-{day:02d}T03:00:00Z"
    r["cluster"] = {"file": "/etc/cvs/rack7.json", "nodes": [{"name": node, "host": node, "transport": "ssh"}], "coordinator": node}
    r["provenance_fields"]["maxtext_version"] = version
    if config: r["config"]["file"] = config
    if not ok: r["stages"][2]["status"] = "FAIL"; r["stages"][2]["outcome"] = "FAIL"
    if tok:
        for sw in r["sweeps"].values():
            sw["steady_state"]["intervals"]["tokens_per_sec_per_gpu"] = {"estimate": tok, "lo": tok * 0.99, "hi": tok * 1.01}
    d = os.path.join(out, "sessions", name); os.makedirs(d)
    json.dump(r, open(os.path.join(d, "results.json"), "w"))
for day in range(1, 7):
    session(f"a{day}", day, "gpu-01"); session(f"b{day}", day, "gpu-07", ok=day % 2 == 0)
rng = random.Random(7)
for n in range(24):
    shifted = n >= 12
    session(f"t{n:02d}", n + 1, "gpu-09", config="/cfg/h200_llama.json",
            tok=10000 * rng.uniform(0.98, 1.02) * (0.89 if shifted else 1.0), version="0.2.6" if shifted else "0.2.5")
PY
mapfile -t nights < <(ls -d "$out"/sessions/[ab]*)
h ingest "${nights[@]}" >"$out/ingest1.txt" || fail "ingest: $(cat "$out/ingest1.txt")"
grep -q "12 recorded, 0 already there" "$out/ingest1.txt" || fail "ingest: $(tail -1 "$out/ingest1.txt")"
h ingest "${nights[@]}" >"$out/ingest2.txt"
grep -q "0 recorded, 12 already there" "$out/ingest2.txt" || fail "re-ingest is not idempotent: $(tail -1 "$out/ingest2.txt")"
[[ $(h sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 12 ]] || fail "sessions"
[[ $(h sessions --since 2026-11-04 --cluster rack7 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))') == 6 ]] \
  || fail "sessions --since --cluster"
h node gpu-07 --json | python3 -c '
import json, sys
l = json.load(sys.stdin)
assert [x["outcome"] for x in l] == ["FAIL", "PASS"] * 3, l' || fail "the ledger of gpu-07"
h lemons --k 2 --n 5 | grep -q "^gpu-07	suspect or failed in 2 of its last 5" || fail "lemons: $(h lemons)"
h lemons --k 2 --n 5 | grep -q "^gpu-01" && fail "gpu-01 is no lemon"

# The trend: one change point, at night 13, attributed to maxtext_version.
mapfile -t trend < <(ls -d "$out"/sessions/t*)
h ingest "${trend[@]}" >/dev/null
h trend --config h200_llama --metric tokens_per_sec_per_gpu --sweep BS=2,PRECISION=BF16,SL=128 --out "$out/trend.html" --json \
  >"$out/trend.json" || fail "trend"
python3 - "$out/trend.json" <<'PY' || fail "trend: $(cat "$out/trend.json")"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["sessions"] == 24, t["sessions"]
cps = t["change_points"]
assert len(cps) == 1, cps
c = cps[0]
assert c["started_at"].startswith("2026-11-13"), c
assert [x["field"] for x in c["changed"]] == ["maxtext_version"], c["changed"]
assert -13 < c["change_pct"] < -9, c
print(c["words"])
PY
grep -q 'class="cp"' "$out/trend.html" || fail "no change point on the trend page"

# A writer killed inside its transaction: the store as it was, and it takes the session after.
python3 - "$root/tests/data/results/cpu_single_results_current.json" "$out/sessions/late" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1])); r["started_at"] = "2026-12-01T03:00:00Z"; os.makedirs(sys.argv[2])
json.dump(r, open(os.path.join(sys.argv[2], "results.json"), "w"))
PY
before=$(h sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
CVS_HISTORY_TEST_HOLD="$out/inside" "$cvs" history --history "$store" ingest "$out/sessions/late" >/dev/null 2>&1 &
writer=$!
for _ in $(seq 1 300); do [[ -f "$out/inside" ]] && break; sleep 0.05; done
[[ -f "$out/inside" ]] || fail "the writer never reached its commit"
kill -9 $writer; wait $writer 2>/dev/null || true
after=$(h sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $after == "$before" ]] || fail "a killed writer left its session ($before sessions before, $after after)"
h ingest "$out/sessions/late" | grep -q "1 recorded" || fail "the store does not take the session after the crash"

# Two writers at once, 8 sessions each.
python3 - "$root/tests/data/results/cpu_single_results_current.json" "$out/sessions" <<'PY'
import json, os, sys
base = json.load(open(sys.argv[1]))
for w in "xy":
    for d in range(1, 9):
        r = json.loads(json.dumps(base)); r["started_at"] = f"2026-10-{d:02d}T0{d}:00:00Z"
        r["cluster"] = {"file": "", "nodes": [{"name": f"gpu-{w}", "host": "h", "transport": "ssh"}], "coordinator": "h"}
        p = os.path.join(sys.argv[2], f"{w}{d}"); os.makedirs(p); json.dump(r, open(os.path.join(p, "results.json"), "w"))
PY
h ingest "$out"/sessions/x[0-9] >"$out/w1.txt" 2>&1 &
one=$!
h ingest "$out"/sessions/y[0-9] >"$out/w2.txt" 2>&1 &
two=$!
wait $one || fail "writer 1: $(cat "$out/w1.txt")"
wait $two || fail "writer 2: $(cat "$out/w2.txt")"
total=$(h sessions --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $total == $((before + 1 + 16)) ]] || fail "two writers: $total sessions, expected $((before + 17))"
echo "$engine: ingest, re-ingest, ledger, lemons, trend, a killed writer and two writers: all hold"
echo "1 passed, 0 failed"
