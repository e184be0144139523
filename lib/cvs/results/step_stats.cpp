#include "cvs/results/step_stats.hpp"

#include "cvs/catalog/metric_catalog.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "cvs/results/metrics.hpp"

namespace cvs {
namespace {

// The series the statistics read: a std::vector<double>, or a slice of a DecimalColumn (the
// steady-state window of a long log, scaled to milliseconds or multiplied by a rate) read in place.
struct ColumnSlice {
  const DecimalColumn* c;
  std::size_t from = 0, n = 0;
  double mul = 1.0;  // 1e3: seconds read as milliseconds
  std::size_t size() const { return n; }
  double operator[](std::size_t i) const { return (*c)[from + i] * mul; }  // x 1.0 is exact
};

// Work per step of the slice: rate x seconds, as MaxText's rate times the step's time.
struct WorkSlice {
  const DecimalColumn* rate;
  const DecimalColumn* seconds;
  std::size_t from = 0, n = 0;
  std::size_t size() const { return n; }
  double operator[](std::size_t i) const { return (*rate)[from + i] * (*seconds)[from + i]; }
};

template <class S>
double mean_of(const S& x, std::size_t b, std::size_t e) {
  double sum = 0.0;
  for (std::size_t i = b; i < e; ++i) sum += x[i];
  return sum / static_cast<double>(e - b);
}

double mean_of(const std::vector<double>& v) {
  return mean_of(v, 0, v.size());
}

// Two-sided t quantile for `confidence` with df degrees of freedom.
double t_quantile(double confidence, std::size_t df) {
  boost::math::students_t dist(static_cast<double>(df));
  return boost::math::quantile(dist, 1.0 - (1.0 - confidence) / 2.0);
}

// The t-interval around `centre` from per-batch values.
BatchMeans interval_from_batches(const std::vector<double>& per_batch, double centre, std::size_t size,
                                 double confidence) {
  const std::size_t b = per_batch.size();
  const double m = mean_of(per_batch);
  double ss = 0;
  for (double v : per_batch) ss += (v - m) * (v - m);
  const double se = std::sqrt(ss / static_cast<double>(b - 1)) / std::sqrt(static_cast<double>(b));
  const double half = t_quantile(confidence, b - 1) * se;
  BatchMeans r;
  r.ci = {centre, centre - half, centre + half};
  r.batches = b;
  r.batch_size = size;
  return r;
}

template <class S>
std::optional<std::size_t> mser5_of(const S& x) {
  const std::size_t m = x.size() >= 10 ? 5 : 1;
  const std::size_t nb = x.size() / m;
  if (nb < 2) return std::nullopt;
  // MSER(d) = sum_{j >= d} (z_j - mean_d)^2 / (nb - d)^2 over the batch means z, for truncations
  // in the first half (later ones rest on too few batches to be told from noise). The sums of
  // squares of every suffix in one backward pass (Welford's update, one batch at a time), kept
  // for the first half only: linear in the batches, a tenth of a double per step.
  const std::size_t half = nb / 2 + 1;
  std::vector<double> suffix_ss(half, 0.0);
  double mu = 0, m2 = 0;
  for (std::size_t j = nb; j-- > 0;) {
    const double z = mean_of(x, j * m, (j + 1) * m);
    const double count = static_cast<double>(nb - j);
    const double delta = z - mu;
    mu += delta / count;
    m2 += delta * (z - mu);
    if (j < half) suffix_ss[j] = m2;
  }
  std::size_t best_d = 0;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t d = 0; 2 * d <= nb && d + 2 <= nb; ++d) {
    const double k = static_cast<double>(nb - d);
    const double stat = suffix_ss[d] / (k * k);
    if (stat < best * (1 - 1e-12)) {
      best = stat;
      best_d = d;
    }
  }
  return best_d * m;
}

template <class S>
std::optional<Drift> drift_of(const S& x) {
  const std::size_t b = batch_count(x.size());
  if (b < 3) return std::nullopt;
  const std::size_t size = x.size() / b, skip = x.size() - b * size;
  std::vector<double> z(b);
  for (std::size_t j = 0; j < b; ++j) z[j] = mean_of(x, skip + j * size, skip + (j + 1) * size);
  const double mx = static_cast<double>(b - 1) / 2, my = mean_of(z);
  double sxy = 0, sxx = 0;
  for (std::size_t j = 0; j < b; ++j) {
    sxy += (static_cast<double>(j) - mx) * (z[j] - my);
    sxx += (static_cast<double>(j) - mx) * (static_cast<double>(j) - mx);
  }
  const double slope = sxy / sxx;
  double sse = 0;
  for (std::size_t j = 0; j < b; ++j) {
    const double r = z[j] - my - slope * (static_cast<double>(j) - mx);
    sse += r * r;
  }
  const double se = std::sqrt(sse / static_cast<double>(b - 2) / sxx);
  Drift d;
  d.start = my - slope * mx;
  d.end = my + slope * mx;
  d.relative = my != 0 ? slope * static_cast<double>(b - 1) / my : 0;
  d.t =
      se > 0 ? slope / se : (slope == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), slope));
  return d;
}

template <class S>
std::optional<BatchMeans> batch_means_of(const S& x, double confidence) {
  const std::size_t b = batch_count(x.size());
  if (b == 0) return std::nullopt;
  const std::size_t size = x.size() / b, skip = x.size() - b * size;
  std::vector<double> means(b);
  for (std::size_t j = 0; j < b; ++j) means[j] = mean_of(x, skip + j * size, skip + (j + 1) * size);
  return interval_from_batches(means, mean_of(means), size, confidence);
}

template <class W, class T>
std::optional<BatchMeans> batch_ratio_of(const W& work, const T& time, double confidence) {
  if (work.size() != time.size()) return std::nullopt;
  const std::size_t b = batch_count(time.size());
  if (b == 0) return std::nullopt;
  const std::size_t size = time.size() / b, skip = time.size() - b * size;
  std::vector<double> rates(b);
  double all_w = 0, all_t = 0;
  for (std::size_t j = 0; j < b; ++j) {
    double w = 0, t = 0;
    for (std::size_t i = skip + j * size; i < skip + (j + 1) * size; ++i) {
      w += work[i];
      t += time[i];
    }
    if (!(t > 0)) return std::nullopt;
    rates[j] = w / t;
    all_w += w;
    all_t += t;
  }
  return interval_from_batches(rates, all_w / all_t, size, confidence);
}

// percentile() of the whole series: on a copy for a vector, by selection in place for a column.
double percentile_of(const std::vector<double>& x, double pct) {
  return percentile(x, pct);
}

double percentile_of(const ColumnSlice& x, double pct) {
  if (x.n == 0) return std::nan("");
  const auto r = percentile_rank(x.n, pct);
  const auto v = x.c->order_statistics({{x.from, x.from + x.n}}, {r.lo, r.hi});
  return r.at(v[0] * x.mul, v[1] * x.mul);
}

// The distinct values of a column slice of 1- or 2-byte counts, in order, and each code's rank
// among them: what a resample's histogram is indexed by.
struct DenseCodes {
  std::vector<std::uint32_t> rank;  // by code
  std::vector<double> values;       // by rank, as the slice reads them

  static std::shared_ptr<const DenseCodes> of(const ColumnSlice& x) {
    if (x.c->width() > 2) return nullptr;
    auto d = std::make_shared<DenseCodes>();
    d->rank.assign(std::size_t{1} << (8 * x.c->width()), 0);
    for (std::size_t i = 0; i < x.n; ++i) d->rank[x.c->code(x.from + i)] = 1;
    if (d->rank[x.c->absent()]) return nullptr;  // a NaN in the slice: the general path says what it does
    for (std::size_t c = 0; c < d->rank.size(); ++c)
      if (d->rank[c]) {
        d->rank[c] = static_cast<std::uint32_t>(d->values.size());
        d->values.push_back(x.c->decode(c) * x.mul);
      }
    return d;
  }

  // percentile() of the m values counted in hist.
  double percentile(const std::vector<std::size_t>& hist, std::size_t m, double pct) const {
    const auto r = percentile_rank(m, pct);
    std::size_t d = 0, below = hist[0];
    while (below <= r.lo) below += hist[++d];
    const double a = values[d];
    while (below <= r.hi) below += hist[++d];
    return r.at(a, values[d]);
  }
};

// The percentile intervals of several percentiles from the same resamples (one pass of sampling
// for p50 and p95 alike: the same seed gives each the resamples it would get alone).
template <class S>
std::vector<std::optional<Interval>> bootstrap_of(const S& x, const std::vector<double>& pcts,
                                                  double confidence, int resamples, std::uint64_t seed) {
  const std::size_t n = x.size();
  std::vector<std::optional<Interval>> out(pcts.size());
  if (n < 4 || resamples < 10) return out;
  // Resamples of m = min(n, kBootstrapMaxResample) observations (m-out-of-n): above that size
  // the cost stays flat (a million-step log takes as long as 20 000 steps), and the spread of
  // the resampled percentiles around the estimate is scaled by sqrt(m / n) back to n.
  const std::size_t m = std::min(n, kBootstrapMaxResample);
  const auto block = static_cast<std::size_t>(std::ceil(std::cbrt(static_cast<double>(n))));
  // Every resample's block starts drawn first, in the order one loop would draw them (the same
  // seed gives the same resamples), then the resamples shared among threads: each resample is
  // a function of its starts alone, so the intervals do not depend on the thread count.
  const std::size_t per = (m + block - 1) / block;
  const auto count = static_cast<std::size_t>(resamples);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> start(0, n - 1);
  std::vector<std::size_t> starts(count * per);
  for (auto& s : starts) s = start(rng);
  std::vector<std::vector<double>> stats(pcts.size(), std::vector<double>(count));
  const auto fill = [&](std::size_t r, auto&& put) {
    std::size_t filled = 0;
    for (std::size_t b = 0; b < per; ++b) {
      std::size_t i = starts[r * per + b];
      for (std::size_t k = 0; k < block && filled < m; ++k, ++filled) {
        put(i);
        if (++i == n) i = 0;
      }
    }
  };
  std::function<void(std::size_t, std::size_t)> work = [&](std::size_t r0, std::size_t r1) {
    std::vector<double> sample(m);
    for (std::size_t r = r0; r < r1; ++r) {
      std::size_t filled = 0;
      fill(r, [&](std::size_t i) { sample[filled++] = x[i]; });
      const auto v = percentiles_in_place(sample, pcts);
      for (std::size_t p = 0; p < pcts.size(); ++p) stats[p][r] = v[p];
    }
  };
  if constexpr (std::is_same_v<S, ColumnSlice>)
    if (auto dense = DenseCodes::of(x))
      work = [&, dense](std::size_t r0, std::size_t r1) {
        // A column of 1- or 2-byte counts: each resample counted into a histogram of the window's
        // distinct values, its percentiles read off the counts (the same order statistics as a
        // selection, without sorting anything).
        std::vector<std::size_t> hist(dense->values.size());
        for (std::size_t r = r0; r < r1; ++r) {
          std::fill(hist.begin(), hist.end(), 0);
          fill(r, [&](std::size_t i) { ++hist[dense->rank[x.c->code(x.from + i)]]; });
          for (std::size_t p = 0; p < pcts.size(); ++p) stats[p][r] = dense->percentile(hist, m, pcts[p]);
        }
      };
  const std::size_t threads =
      m * count < 4'000'000 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(work, count * t / threads, count * (t + 1) / threads);
  work(0, count / threads);
  for (auto& t : pool) t.join();
  const double a = (1.0 - confidence) / 2.0;
  const double scale = std::sqrt(static_cast<double>(m) / static_cast<double>(n));
  for (std::size_t p = 0; p < pcts.size(); ++p) {
    const double estimate = percentile_of(x, pcts[p]);
    const double lo = percentile(stats[p], 100.0 * a), hi = percentile(stats[p], 100.0 * (1.0 - a));
    out[p] = m == n
                 ? Interval{estimate, lo, hi}
                 : Interval{estimate, estimate - (estimate - lo) * scale, estimate + (hi - estimate) * scale};
  }
  return out;
}

}  // namespace

std::optional<std::size_t> mser5_truncation(const std::vector<double>& x) {
  return mser5_of(x);
}

std::optional<Drift> drift(const std::vector<double>& x) {
  return drift_of(x);
}

std::size_t batch_count(std::size_t n) {
  if (n < 4) return 0;
  const auto b = static_cast<std::size_t>(std::floor(std::sqrt(static_cast<double>(n))));
  return std::clamp<std::size_t>(b, 2, 20);
}

std::optional<BatchMeans> batch_means(const std::vector<double>& x, double confidence) {
  return batch_means_of(x, confidence);
}

std::optional<BatchMeans> batch_ratio(const std::vector<double>& work, const std::vector<double>& time,
                                      double confidence) {
  return batch_ratio_of(work, time, confidence);
}

std::optional<Interval> bootstrap_percentile(const std::vector<double>& x, double pct, double confidence,
                                             int resamples, std::uint64_t seed) {
  return bootstrap_of(x, {pct}, confidence, resamples, seed)[0];
}

double lag1_autocorrelation(const std::vector<double>& x) {
  if (x.size() < 3) return 0.0;
  const double m = mean_of(x);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    den += (x[i] - m) * (x[i] - m);
    if (i + 1 < x.size()) num += (x[i] - m) * (x[i + 1] - m);
  }
  return den > 0 ? num / den : 0.0;
}

const std::vector<std::string>& interval_metric_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> names;
    for (const auto& m : metric_catalog())
      if (m.interval) names.emplace_back(m.name);
    return names;
  }();
  return v;
}

bool has_interval(const std::string& metric) {
  const auto& v = interval_metric_names();
  return std::find(v.begin(), v.end(), metric) != v.end();
}

namespace {

// Whether the window's work can be measured for a rate: every record has it (finite) and at
// least one is non-zero (MaxText rounds rates to 3 decimals: all-zero says nothing).
bool work_known(const DecimalColumn& rate, std::size_t from, std::size_t to) {
  bool any = false;
  for (std::size_t i = from; i < to; ++i) {
    const double r = rate[i];
    if (std::isnan(r)) return false;
    any |= r > 0;
  }
  return any;
}

// Widens the step-time and rate intervals to the trend line's range over the window.
void widen_for_drift(SteadyState& s, const Drift& d) {
  s.drift = d;
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "the step time drifts %+.0f %% across the %zu steady-state steps (slope t = %.1f): its "
                "intervals are widened to the trend's range",
                100 * d.relative, s.n, d.t);
  s.note = buf;
  auto mean = s.intervals.find("step_time_seconds");
  if (mean == s.intervals.end() || !(mean->second.estimate > 0)) return;
  const double t_lo = std::min(d.start, d.end), t_hi = std::max(d.start, d.end);
  const double f_lo = t_lo / mean->second.estimate, f_hi = t_hi / mean->second.estimate;
  for (const char* m : {"step_time_seconds", "step_time_mean_ms"}) {
    auto& i = s.intervals[m];
    i.lo = std::min(i.lo, i.estimate * f_lo);
    i.hi = std::max(i.hi, i.estimate * f_hi);
  }
  for (const char* m : {"tokens_per_sec_per_gpu", "tokens_per_sec_total", "tflops_per_sec_per_gpu"})
    if (auto it = s.intervals.find(m); it != s.intervals.end() && f_lo > 0) {
      it->second.lo = std::min(it->second.lo, it->second.estimate / f_hi);
      it->second.hi = std::max(it->second.hi, it->second.estimate / f_lo);
    }
}

}  // namespace

bool is_timed(const StepRecord& r) {
  return r.seconds && std::isfinite(*r.seconds) && !r.profiler_boundary;
}

void TimedSeries::add(const StepRecord& r) {
  if (runs_.empty() || r.step != last_step_ + 1) runs_.emplace_back(size(), r.step);
  last_step_ = r.step;
  seconds_.push_back(*r.seconds);
  tokens_.push_back(r.tokens_per_device.value_or(std::nan("")));
  tflops_.push_back(r.tflops_per_device.value_or(std::nan("")));
}

long long TimedSeries::step_at(std::size_t i) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), i,
                             [](std::size_t v, const auto& run) { return v < run.first; });
  --it;
  return it->second + static_cast<long long>(i - it->first);
}

SteadyState steady_state(const TimedSeries& timed, int devices, double confidence) {
  SteadyState s;
  const std::size_t total = timed.size();
  const DecimalColumn& secs = timed.seconds();
  const auto cut = mser5_of(ColumnSlice{&secs, 0, total});
  if (!cut) {
    s.why = "only " + std::to_string(total) + " timed step(s): no steady state to measure";
    return s;
  }
  // The first record always includes compilation (MaxText's step 0), whatever MSER says.
  s.first = std::max<std::size_t>(*cut, 1);
  s.n = total > s.first ? total - s.first : 0;
  if (s.n < 4) {
    s.why = "only " + std::to_string(s.n) + " steady-state step(s) after the warm-up: at least 4 are needed";
    return s;
  }
  const ColumnSlice st{&secs, s.first, s.n};
  s.found = true;
  s.first_step = timed.step_at(s.first);
  if (auto bm = batch_means_of(st, confidence)) {
    s.intervals["step_time_seconds"] = bm->ci;
    s.intervals["step_time_mean_ms"] = {bm->ci.estimate * 1e3, bm->ci.lo * 1e3, bm->ci.hi * 1e3};
  }
  const auto p = bootstrap_of(ColumnSlice{&secs, s.first, s.n, 1e3}, {50, 95}, confidence,
                              kBootstrapResamples, kBootstrapSeed);
  if (p[0]) s.intervals["step_time_p50_ms"] = *p[0];
  if (p[1]) s.intervals["step_time_p95_ms"] = *p[1];
  if (work_known(timed.tokens_per_device(), s.first, total))
    if (auto r = batch_ratio_of(WorkSlice{&timed.tokens_per_device(), &secs, s.first, s.n}, st, confidence)) {
      s.intervals["tokens_per_sec_per_gpu"] = r->ci;
      const double d = devices;
      s.intervals["tokens_per_sec_total"] = {r->ci.estimate * d, r->ci.lo * d, r->ci.hi * d};
    }
  if (work_known(timed.tflops_per_device(), s.first, total))
    if (auto r = batch_ratio_of(WorkSlice{&timed.tflops_per_device(), &secs, s.first, s.n}, st, confidence))
      s.intervals["tflops_per_sec_per_gpu"] = r->ci;
  if (const auto d = drift_of(st); d && std::fabs(d->relative) > kMaxDrift && std::fabs(d->t) > kDriftT)
    widen_for_drift(s, *d);
  return s;
}

SteadyState steady_state(const std::vector<StepRecord>& steps, int devices, double confidence) {
  TimedSeries timed;
  for (const auto& r : steps)
    if (is_timed(r)) timed.add(r);
  return steady_state(timed, devices, confidence);
}

}  // namespace cvs
