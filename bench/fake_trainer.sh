#!/bin/sh
# A simulated node for bench_fanout: prints MaxText-format step lines (the format the log
# scanner parses) every CVS_BENCH_STEP_S seconds; the rank named by CVS_BENCH_FAIL_RANK prints an
# NCCL error at step CVS_BENCH_FAIL_STEP and records when it did. Not MaxText: the benchmark
# measures the suite's own overhead. One perl process per node that never forks, so that a
# thousand of them on one host leave the CPU to the suite being measured.
exec perl -MTime::HiRes -e '
  $| = 1;
  my ($steps, $step_s, $fail_step) = ($ENV{CVS_BENCH_STEPS} // 20, $ENV{CVS_BENCH_STEP_S} // 0.2, $ENV{CVS_BENCH_FAIL_STEP} // 3);
  my $fail = ($ENV{NODE_RANK} // 0) eq ($ENV{CVS_BENCH_FAIL_RANK} // -1);
  for my $i (0 .. $steps - 1) {
    print "I1202 12:00:00.000000 1 metric_logger.py:265] completed step: $i, seconds: $step_s, TFLOP/s/device: 100.000, Tokens/s/device: 1000.000, total_weights: 256, loss: 5.000, lm_loss: 5.000, perplexity: 148.413\n";
    if ($fail && $i == $fail_step) {
      open(my $f, ">", $ENV{CVS_BENCH_FAIL_STAMP}) or die; printf $f "%.6f\n", Time::HiRes::time(); close $f;
      print "node-$ENV{NODE_RANK}:1234:1234 [0] NCCL ERROR ncclSystemError: simulated by bench_fanout\n";
    }
    Time::HiRes::sleep($step_s);
  }'
