#pragma once
// A RecordSink that hands the records on to another sink on a thread of its own, in their order,
// in batches: a whole-file scan (scan_log_file) finds and parses the lines on one core while the
// figures are taken on another.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "cvs/logs/logscan.hpp"

namespace cvs {

class BackgroundSink : public RecordSink {
 public:
  explicit BackgroundSink(RecordSink& to);
  ~BackgroundSink() override;  // stops the thread; what it still held is dropped
  BackgroundSink(const BackgroundSink&) = delete;
  BackgroundSink& operator=(const BackgroundSink&) = delete;

  void step(const StepRecord& r) override { add(r); }
  void step(StepRecord&& r) override { add(std::move(r)); }
  void eval(const EvalRecord& e) override { add(e); }
  void marker(const StepMarker& m) override { add(m); }
  // Hands on the last records and waits until `to` has taken them all; rethrows what `to` threw.
  // A throw in `to` is also rethrown by the step(), eval() or marker() that hands over the next
  // batch, so a scan stops within two batches (2048 records) of it.
  void close();

 private:
  using Record = std::variant<StepRecord, EvalRecord, StepMarker>;
  static constexpr std::size_t kBatch = 1024;  // ~0.2 MiB a batch, three batches at most
  template <typename T>
  void add(T&& r) {
    filling_.emplace_back(std::forward<T>(r));
    if (filling_.size() == kBatch) hand_over();
  }
  void hand_over();  // waits while the thread still holds the batch before; rethrows `to`'s throw
  void run();
  void stop();

  RecordSink& to_;
  std::vector<Record> filling_, handed_;
  bool handed_full_ = false, closing_ = false;
  std::exception_ptr error_;  // what `to` threw; set by the thread under mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread worker_;
};

}  // namespace cvs
