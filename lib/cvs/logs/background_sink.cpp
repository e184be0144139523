#include "cvs/logs/background_sink.hpp"

#include <type_traits>

namespace cvs {

BackgroundSink::BackgroundSink(RecordSink& to) : to_(to) {
  filling_.reserve(kBatch);
  handed_.reserve(kBatch);
  worker_ = std::thread([this] { run(); });
}

BackgroundSink::~BackgroundSink() {
  stop();
}

void BackgroundSink::hand_over() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !handed_full_ || error_; });
  if (error_) {  // `to` gave up: the scan stops here, within two batches of the throw
    lock.unlock();
    stop();
    std::rethrow_exception(error_);
  }
  filling_.swap(handed_);
  handed_full_ = true;
  cv_.notify_all();
}

void BackgroundSink::run() {
  std::vector<Record> work;
  work.reserve(kBatch);
  bool failed = false;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return handed_full_ || closing_; });
      if (!handed_full_) return;  // closing, and nothing left
      work.swap(handed_);
      handed_full_ = false;
      cv_.notify_all();
    }
    // After a throw the rest is only drained: the scan must not wait on a sink that gave up.
    if (!failed) try {
        for (const auto& r : work)
          std::visit(
              [this](const auto& v) {
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, StepRecord>)
                  to_.step(v);
                else if constexpr (std::is_same_v<T, EvalRecord>)
                  to_.eval(v);
                else
                  to_.marker(v);
              },
              r);
      } catch (...) {
        failed = true;
        std::lock_guard lock(mu_);
        error_ = std::current_exception();
        cv_.notify_all();
      }
    work.clear();
  }
}

void BackgroundSink::stop() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  worker_.join();
}

void BackgroundSink::close() {
  if (!filling_.empty()) hand_over();
  stop();
  if (error_) std::rethrow_exception(error_);
}

}  // namespace cvs
