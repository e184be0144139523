// MaxText's JSON-lines `metrics_file` (metric_logger.write_metrics_locally): one object per
// step with learning/loss, perf/step_time_seconds, perf/per_device_tflops_per_sec,
// perf/per_device_tokens_per_sec and step (a float). Its quirks, handled here: NaN/Infinity are
// written as bare tokens (not JSON), every process appends to the same file (identical rows per
// step), and eval rows have no learning/loss.
#pragma once

#include <string>
#include <vector>

#include "cvs/logs/maxtext_log.hpp"

namespace cvs {

// Parses the file's text into step records in file order. Rows repeated by several processes
// collapse into one; the same step with a different loss is a blended file and throws
// MetricsError (see maxtext_log.hpp), as does a line that is not a JSON object.
std::vector<StepRecord> parse_metrics_file(const std::string& text, const std::string& source);

}  // namespace cvs
