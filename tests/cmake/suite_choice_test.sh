#!/usr/bin/env bash
# The configure step chooses what `ctest -L jaxmaxtext_single` runs: a user's config and cluster
# given as -DCVS_SUITE_CONFIG / -DCVS_SUITE_CLUSTER reach the suite's command line, without the
# CPU default's poll budgets and baseline.
#   suite_choice_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1; work=$2
rm -rf "$work"
cmake -S "$src" -B "$work" -DCVS_BUILD_BENCH=OFF -DCVS_SUITE_CONFIG=/site/x.json \
  -DCVS_SUITE_CLUSTER=/site/cluster.json >"$work.log" 2>&1 || { cat "$work.log"; exit 1; }
# The suites' CTestTestfile holds each entry's command line (the suites need not be built for it).
python3 - "$work/suites/CTestTestfile.cmake" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
line = [l for l in text.splitlines() if l.startswith("add_test([=[jaxmaxtext_single]=]")][0]
args = re.findall(r'"([^"]*)"', line)
assert args[1:] == ["--config", "/site/x.json", "--cluster", "/site/cluster.json"], args
props = [l for l in text.splitlines() if l.startswith("set_tests_properties([=[jaxmaxtext_single]=]")][0]
assert "CVS_CALIBRATION_DIR" not in props, ("a real cluster keeps its calibration", props)
assert 'TIMEOUT "0"' in props, props
print("jaxmaxtext_single runs", " ".join(args[1:]))
PY
rm -rf "$work" "$work.log"
echo "1 passed, 0 failed"
