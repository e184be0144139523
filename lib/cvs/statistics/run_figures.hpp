// A run's figures from its log records: the one pipeline from a MaxText log (or metrics_file) to
// the metrics, used by the suite (a sweep's head-node log, fixtures/cvs/session.cpp) and by
// `cvs metrics` (tools/cvs/cmd_metrics.cpp), so the command gives the figures the suite decides on.
// Each host that logged steps (Ray, srun, MPI and kubectl prefixes name it; a log of one stream has
// one, named "") is a view of the same run: the loss figures and steady state are those of the
// host that logged the most steps, the speed figures (the catalog's `speed` metrics) the mean of
// the hosts'.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvs/logs/logscan.hpp"
#include "cvs/logs/maxtext_log.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

// One view's figures from records already read, in log order (evals first): a StepSeries fed them.
// markers: the log's checkpoint saves and profiler windows (ScanResult::markers), placed among
// the steps by their line numbers; none for steps that were not read from the log.
RunMetrics compute_metrics(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx, const std::vector<StepMarker>& markers = {});

// The first step whose loss or rate is not finite, and where it was read.
struct FirstNonFinite {
  std::optional<std::pair<StepRecord, NonFinite>> seen;
  void check(const StepRecord& r) {
    if (!seen)
      if (const auto bad = first_nonfinite(r)) seen = std::pair{r, *bad};
  }
};

struct HostFigures {
  std::string host;
  std::size_t steps = 0;
  RunMetrics metrics;
};

struct RunFigures {
  RunMetrics metrics;              // the run's (see above)
  std::size_t steps = 0;           // the records its loss figures are from
  std::vector<HostFigures> hosts;  // each host's own, when more than one host logged steps
  FirstNonFinite nonfinite;        // of every host's records
};

// Records in log order, each step into its host's view; evals and markers reach every host's.
// A RecordSink: the log scanner streams a multi-GB log into it in bounded memory.
class RunFiguresBuilder : public RecordSink {
 public:
  // keep_curves: each view keeps every step's loss and the sampled curve (for plots).
  RunFiguresBuilder(const MetricsContext& ctx, bool keep_curves);
  ~RunFiguresBuilder() override;
  void step(const StepRecord& r) override;
  void eval(const EvalRecord& e) override;
  void marker(const StepMarker& m) override;
  // Records already read (a ScanResult's), as the scanner would have streamed them: the evals
  // first (they carry no line), each marker before the first step line after it.
  void replay(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
              const std::vector<StepMarker>& markers);
  // Throws MetricsError when a host's step numbers repeat or go down (the log holds more than one
  // run); `source` names the log in it.
  RunFigures finish(const std::string& source);

 private:
  struct Host;
  Host& of(const std::string& host);
  MetricsContext ctx_;
  bool keep_curves_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<EvalRecord> evals_;
  std::optional<long long> run_first_step_;
};

// The figures of a ScanResult's records (the suite's head-node log, named `source`).
RunFigures figures_of_records(const std::vector<StepRecord>& steps, const std::vector<EvalRecord>& evals,
                              const std::vector<StepMarker>& markers, const MetricsContext& ctx,
                              const std::string& source);

// The figures of MaxText's JSON-lines metrics_file rows (full precision; one host, no markers).
// Throws MetricsError when the step numbers repeat or go down.
RunFigures figures_of_rows(const std::vector<StepRecord>& rows, const std::vector<EvalRecord>& evals,
                           const MetricsContext& ctx, const std::string& source);

// What the log says beside its steps (its peak memory), onto a run's figures from any source.
void add_log_figures(RunMetrics& m, const ScanResult& log);

// An extended run's loss figures (the catalog's loss_metrics) over its first `configured_steps`
// steps, as a plain run of that many steps has them; its loss curves likewise.
void keep_loss_of_configured_steps(RunMetrics& m, const std::vector<StepRecord>& steps,
                                   const std::vector<EvalRecord>& evals, const MetricsContext& ctx,
                                   long long configured_steps);

}  // namespace cvs
