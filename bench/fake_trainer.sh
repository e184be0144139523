#!/bin/sh
# A simulated node for bench_fanout: prints MaxText-format step lines (the format the log
# scanner parses) every 0.2 s; the rank named by CVS_BENCH_FAIL_RANK prints an NCCL error at
# step 3 and records when it did. Not MaxText: the benchmark measures the suite's own overhead.
steps=${CVS_BENCH_STEPS:-20}
i=0
while [ "$i" -lt "$steps" ]; do
  echo "I1202 12:00:00.000000 1 metric_logger.py:265] completed step: $i, seconds: 0.200, TFLOP/s/device: 100.000, Tokens/s/device: 1000.000, total_weights: 256, loss: 5.000, lm_loss: 5.000, perplexity: 148.413"
  if [ "$i" -eq 3 ] && [ "${NODE_RANK:-0}" = "${CVS_BENCH_FAIL_RANK:--1}" ]; then
    date +%s.%N > "$CVS_BENCH_FAIL_STAMP"
    echo "node-$NODE_RANK:1234:1234 [0] NCCL ERROR ncclSystemError: simulated by bench_fanout"
  fi
  i=$((i + 1))
  sleep 0.2
done
