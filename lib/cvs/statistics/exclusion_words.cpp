// The words of the records left out of the speed figures (StepSeries, metrics.hpp): each rule's
// name and the note that says why a step was left out.
#include <string>

#include "cvs/base/enum_names.hpp"
#include "cvs/base/format.hpp"
#include "cvs/statistics/metrics.hpp"

namespace cvs {

namespace {

using enum ExcludedBecause;
constexpr EnumWord<ExcludedBecause> kRuleWords[] = {
    {AsyncDispatch, "asynchronous_dispatch"}, {CatchUp, "catch_up"},  {StartUp, "start_up"}, {Eval, "eval"},
    {CheckpointSave, "checkpoint_save"},      {Profiler, "profiler"}, {Stall, "stall"}};

}  // namespace

const char* to_string(ExcludedBecause b) {
  return word_of(kRuleWords, b);
}

std::string StepSeries::exclusion_note(const Queued& q, ExcludedBecause why, double ref) const {
  const double s = *q.r.seconds;
  const std::string head =
      "step " + std::to_string(q.r.step) + " (" + short_number(s) + " s) left out of the speed figures: ";
  const std::string med = short_number(ref) + " s";
  std::string because;
  switch (why) {
    case ExcludedBecause::StartUp:
      because =
          "outside 0.5-2x the median " + med + " of the steps around it (MaxText's asynchronous dispatch)";
      break;
    case ExcludedBecause::AsyncDispatch:
      because = "far under the median " + med +
                " of the steps around it (MaxText's asynchronous dispatch: the record timed the dispatch, "
                "not the work)";
      break;
    case ExcludedBecause::CatchUp:
      because = "over 1.5x the median " + med + ": the work of the dispatch record of step " +
                std::to_string(last_dispatch_step_.value_or(q.r.step - 1)) + " caught up here";
      break;
    case ExcludedBecause::Eval:
      because = "over 1.5x the median " + med + ": its time includes the eval after step " +
                std::to_string(q.mark->second);
      break;
    case ExcludedBecause::CheckpointSave:
      because = "over 1.5x the median " + med + ": its time includes the checkpoint save of step " +
                std::to_string(q.mark->second);
      break;
    case ExcludedBecause::Profiler:
      because = "over 1.5x the median " + med +
                ": its time includes a profiler window the log opens or closes around it";
      break;
    case ExcludedBecause::Stall:
      because = "a stall: over " + short_number(ctx_.stall_factor) + "x the median " + med +
                " of the steps around it with no eval, checkpoint or profiler in the log to explain it";
      break;
  }
  return head + because;
}

}  // namespace cvs
