#!/usr/bin/env bash
# The jaxmaxtext suites in real containers (podman and dockerd, set up by engine_setup.sh), on the
# CPU default: the Environment owns the lifecycle, whatever the filter; nothing is left behind.
#   container_suite_test.sh SCENARIO ENGINE BUILD_DIR OUT_DIR
# SCENARIO: pass (the whole suite) | filter (one sweep's training run, no test_setup) |
#           cache (one sweep's training run twice: the second's train step compiles from the
#           compile cache, paths.compile_cache under a read-only volume: mounted writable itself) |
#           nan (a diverging run: FAIL) | interrupt (Ctrl-C mid-run) |
#           stale (SIGKILL mid-run, then a new session replaces the left container) |
#           distributed (jaxmaxtext_distributed over the two netns ssh hosts, a podman engine each;
#           run under tests/integration/netns_cluster.sh) |
#           fleet (jaxmaxtext_fleet on two local nodes of this host at once: each run its own
#           container, the config's name with the node appended)
# Skips (exit 77) where the engines do not run, except under CI=true, where that fails.
set -euo pipefail
scenario=$1; engine=$2; build=$3; out=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$out"; mkdir -p "$out"
fail() { echo "FAIL: $*"; tail -40 "$out/suite.log" 2>/dev/null || true; exit 1; }
if ! "$here/engine_setup.sh" --check; then
  [[ "${CI:-}" == "true" ]] && fail "the container engines do not run here: tests/containers/engine_setup.sh sets them up"
  echo "SKIPPED: podman/dockerd do not run the test image here (run tests/containers/engine_setup.sh as root)"
  exit 77
fi
export CVS_CALIBRATION_DIR="$out/no-calibration"
name="cvs-ci-$scenario-$engine"
single="$root/configs/cpu_jaxmaxtext_tiny_single.json"
suite="$build/suites/jaxmaxtext_single"
budget=(--poll-interval-s 1 --startup-budget-s 300 --step-budget-s 30 --quiet)

left() { "$engine" ps --all --filter "name=$name" --format '{{.Names}}' | grep -x "$name" || true; }
assert_gone() { [[ -z "$(left)" ]] || fail "container $name left after $1: $("$engine" ps -a)"; }
status_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$1/results.json"; }
# Waits until a training log of the session at $1 shows MaxText's config lines; 0 when it did.
wait_training() {
  for _ in $(seq 240); do
    local log
    log=$(find "$1"/runs -path '*/node-0/training.log' 2>/dev/null | head -n 1 || true)
    [[ -n "$log" ]] && grep -q "Config param" "$log" && return 0
    sleep 0.5
  done
  return 1
}

case "$scenario" in
  pass | filter)
    flags=(); filter=()
    [[ $scenario == filter ]] && flags=(--one-sweep) && filter=(--gtest_filter='sweep/test_training_run.*')
    python3 "$here/container_config.py" "$single" "$out/config.json" "$engine" --name "$name" "${flags[@]}"
    rc=0
    "$suite" --config "$out/config.json" --output "$out/session" "${budget[@]}" "${filter[@]}" >"$out/suite.log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || fail "exit $rc"
    [[ $(status_of "$out/session") == PASS ]] || fail "status not PASS"
    grep -q "launching container $name" "$out/suite.log" || fail "no launch line"
    if [[ $scenario == filter ]]; then
      grep -q "test_setup" "$out/session/junit.xml" && fail "test_setup ran though the filter left it out"
      [[ $(grep -c "launching container" "$out/suite.log") -eq 1 ]] || fail "launched more than once"
    else
      python3 - "$out/session/results.json" "$engine" <<'PY' || fail "setup provenance"
import json, os, sys
r = json.load(open(sys.argv[1]))
setup = [s for s in r["stages"] if s["stage"] == "test_setup"][0]
assert setup["outcome"] == "PASS", setup
assert r["provenance"]["image_id"], "no image id"
# Every training forked from the container's warm trainer (its log's second line says so).
assert setup["properties"]["warm_start"] == "a warm trainer on each of 1 node(s)", setup["properties"]
# The setup stage's JAX probe too: no import of its own.
assert setup["properties"]["jax_probe"] == "forked from the warm trainer on each of 1 node(s)", setup["properties"]
for key, s in r["sweeps"].items():
    line2 = open(os.path.join(os.path.dirname(sys.argv[1]), s["run"]["nodes"][0]["log"])).read().splitlines()[1]
    assert line2.startswith("cvs-warm: training in process "), (key, line2)
PY
    fi
    assert_gone "a PASS"
    echo "$engine: $scenario PASS, container launched once and removed, trainings forked from its warm trainer" ;;
  cache)
    python3 "$here/container_config.py" "$single" "$out/config.json" "$engine" --name "$name" --one-sweep
    # Under the checkout's read-only volume: the runtime mounts the cache writable (and creates it).
    python3 - "$out/config.json" "$out/jax_compile" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["paths"]["compile_cache"] = sys.argv[2]
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
    for k in 1 2; do
      rc=0
      "$suite" --config "$out/config.json" --output "$out/session$k" "${budget[@]}" \
        --gtest_filter='sweep/test_training_run.*' >"$out/suite.log" 2>&1 || rc=$?
      [[ $rc -eq 0 ]] || fail "run $k: exit $rc"
    done
    compgen -G "$out/jax_compile/jit_train_step*" >/dev/null ||
      fail "no train step in the cache on the host: $(ls -a "$out/jax_compile")"
    python3 - "$out/session1/results.json" "$out/session2/results.json" <<'PY' || fail "the second run's compile"
import json, sys
p = [next(iter(json.load(open(f))["sweeps"].values()))["run"]["nodes"][0]["phases"] for f in sys.argv[1:]]
assert p[0]["compile_cache"]["train_step_hit"] is False, p[0]
assert p[1]["compile_cache"]["train_step_hit"] is True, p[1]
assert p[1]["compile_s"] < p[0]["compile_s"], (p[0]["compile_s"], p[1]["compile_s"])
print(f"compile {p[0]['compile_s']:.2f} s, then {p[1]['compile_s']:.2f} s from the cache")
PY
    assert_gone "two runs"
    echo "$engine: the second run's train step compiled from the cache in the container" ;;
  nan)
    python3 "$here/container_config.py" "$single" "$out/config.json" "$engine" --name "$name" --one-sweep --nan
    rc=0
    "$suite" --config "$out/config.json" --output "$out/session" "${budget[@]}" \
      --gtest_filter='test_setup*:sweep/test_training_run.*' >"$out/suite.log" 2>&1 || rc=$?
    [[ $rc -eq 1 ]] || fail "exit $rc, expected 1 (FAIL)"
    [[ $(status_of "$out/session") == FAIL ]] || fail "status not FAIL"
    grep -qi "nan\|non-finite" "$out/session/results.json" || fail "the NaN is not in results.json"
    [[ -s "$out/session/report.html" ]] || fail "no report"
    assert_gone "a FAIL"
    echo "$engine: NaN run FAIL, report written, container removed" ;;
  interrupt | stale)
    python3 "$here/container_config.py" "$single" "$out/config.json" "$engine" --name "$name" --one-sweep
    "$suite" --config "$out/config.json" --output "$out/session" "${budget[@]}" \
      --gtest_filter='test_setup*:sweep/test_training_run.*' >"$out/suite.log" 2>&1 &
    pid=$!
    wait_training "$out/session" || { kill -9 "$pid"; fail "training never started"; }
    if [[ $scenario == interrupt ]]; then
      kill -INT "$pid"
      rc=0
      timeout 120 tail --pid="$pid" -f /dev/null || fail "the suite did not exit within 120 s of Ctrl-C"
      wait "$pid" || rc=$?
      [[ $rc -ne 0 ]] || fail "exit code 0 after Ctrl-C"
      [[ $(status_of "$out/session") == FAIL ]] || fail "status not FAIL"
      grep -q interrupted "$out/session/results.json" || fail "the interruption is not in results.json"
      [[ -s "$out/session/report.html" ]] || fail "no report"
      assert_gone "Ctrl-C"
      echo "$engine: Ctrl-C stopped the run (exit $rc), report written, container removed"
    else
      kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
      [[ -n "$(left)" ]] || fail "SIGKILL left no container: nothing to test"
      rc=0
      "$suite" --config "$out/config.json" --output "$out/session2" "${budget[@]}" \
        --gtest_filter='test_setup*:sweep/test_training_run.*' >"$out/suite2.log" 2>&1 || rc=$?
      [[ $rc -eq 0 ]] || { cp "$out/suite2.log" "$out/suite.log"; fail "the next session: exit $rc"; }
      grep -q "removing container $name left by an earlier session (jaxmaxtext_single-" "$out/suite2.log" ||
        { cp "$out/suite2.log" "$out/suite.log"; fail "no log line for the stale container"; }
      assert_gone "the next session"
      echo "$engine: the container a SIGKILLed session left was replaced; the next session PASSed, nothing left"
    fi ;;
  fleet)
    python3 "$here/container_config.py" "$single" "$out/config.json" "$engine" --name "$name" --one-sweep
    rc=0
    "$build/suites/jaxmaxtext_fleet" --config "$out/config.json" --cluster "$root/configs/clusters/local_2nodes.json" \
      --output "$out/fleet" --min-fleet 2 "${budget[@]}" '--gtest_filter=test_setup.*:sweep/test_training_run.*' \
      >"$out/suite.log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { cat "$out"/fleet/nodes/*/suite.log | tail -30; fail "exit $rc"; }
    for n in local0 local1; do
      [[ $(status_of "$out/fleet/nodes/$n/report") == PASS ]] || fail "$n: status not PASS"
      grep -q "launching container $name-$n" "$out/fleet/nodes/$n/suite.log" || fail "$n: not its own container"
      [[ -z "$("$engine" ps --all --filter "name=$name-$n" --format '{{.Names}}')" ]] || fail "container $name-$n left"
    done
    echo "fleet: two local nodes at once, containers $name-local0 and $name-local1: PASS, nothing left" ;;
  distributed)
    [[ -n "${CVS_NETNS_DIR:-}" ]] || fail "run under tests/integration/netns_cluster.sh run DIR --"
    for n in cvs-a cvs-b; do  # the image, in each node's own engine
      CONTAINERS_CONF=$CVS_NETNS_DIR/podman-$n/containers.conf CONTAINERS_STORAGE_CONF=$CVS_NETNS_DIR/podman-$n/storage.conf \
        podman import --quiet /var/lib/cvs-test-engines/rootfs.tar localhost/cvs-test-host:latest >/dev/null
    done
    python3 "$here/container_config.py" "$root/configs/cpu_jaxmaxtext_tiny_distributed.json" "$out/config.json" podman --name "$name"
    rc=0
    "$build/suites/jaxmaxtext_distributed" --config "$out/config.json" --cluster "$CVS_NETNS_DIR/cluster.json" \
      --output "$out/session" "${budget[@]}" >"$out/suite.log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || fail "exit $rc"
    [[ $(status_of "$out/session") == PASS ]] || fail "status not PASS"
    for n in cvs-a cvs-b; do
      running=$(CONTAINERS_CONF=$CVS_NETNS_DIR/podman-$n/containers.conf CONTAINERS_STORAGE_CONF=$CVS_NETNS_DIR/podman-$n/storage.conf \
        ip netns exec "$n" podman ps --all --format '{{.Names}}')
      [[ -z "$running" ]] || fail "node $n still has containers: $running"
    done
    [[ $(grep -c "launching container $name" "$out/suite.log") -eq 1 ]] || fail "no single launch line"
    echo "distributed: two ssh nodes, each its own podman engine and container: PASS, nothing left" ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
echo "1 passed, 0 failed"
