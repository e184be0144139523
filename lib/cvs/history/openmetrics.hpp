// A session's figures in the OpenMetrics / Prometheus text format: a file for node_exporter's
// textfile collector (--openmetrics FILE) or a push to a Prometheus Pushgateway (--pushgateway URL).
// Names after Prometheus' conventions, units in the names and in base units (seconds, bytes,
// ratios): tokens_per_sec_per_gpu -> cvs_maxtext_tokens_per_second_per_gpu, step_time_mean_ms ->
// cvs_maxtext_step_time_mean_seconds (/1000), scaling_efficiency_pct ->
// cvs_maxtext_scaling_efficiency_ratio (/100), peak_memory_gb -> cvs_maxtext_peak_memory_bytes.
// Every series has the labels suite, config (the file's stem), cluster and session; per sweep
// also sweep. A speed figure is its steady-state estimate (what the verdict used), with _low and
// _high for its interval; cvs_maxtext_gate{metric, outcome} is 1 for a gate's outcome;
// cvs_maxtext_session_passed and cvs_maxtext_session_start_timestamp_seconds; a fleet run's
// cvs_maxtext_node_suspect{node}. The text ends with "# EOF" (a comment to the Prometheus parser).
#pragma once

#include <string>

#include "cvs/history/store.hpp"

namespace cvs::history {

std::string openmetrics_text(const SessionEntry& e);

// The Prometheus name of a catalog metric and the factor to its base unit.
std::pair<std::string, double> prometheus_name(const std::string& metric);

// PUTs the text to http://host:port[/prefix]/metrics/job/cvs_maxtext/suite/../config/../cluster/..
// (label values base64url-encoded): the session's figures replace the group's. StoreError on
// anything but a 2xx answer.
void push_to_gateway(const std::string& url, const SessionEntry& e, const std::string& text);

}  // namespace cvs::history
