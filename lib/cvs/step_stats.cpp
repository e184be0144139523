#include "cvs/step_stats.hpp"

#include "cvs/metric_catalog.hpp"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>

#include "cvs/metrics.hpp"

namespace cvs {
namespace {

double mean_of(const double* b, const double* e) {
  return std::accumulate(b, e, 0.0) / static_cast<double>(e - b);
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
  const double m = mean_of(per_batch.data(), per_batch.data() + b);
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

}  // namespace

std::optional<std::size_t> mser5_truncation(const std::vector<double>& x) {
  const std::size_t m = x.size() >= 10 ? 5 : 1;
  const std::size_t nb = x.size() / m;
  if (nb < 2) return std::nullopt;
  std::vector<double> z(nb);
  for (std::size_t j = 0; j < nb; ++j) z[j] = mean_of(x.data() + j * m, x.data() + (j + 1) * m);
  // MSER(d) = sum_{j >= d} (z_j - mean_d)^2 / (nb - d)^2, over truncations in the first half
  // (later ones rest on too few batches to be told from noise).
  // The sums of squares of every suffix in one backward pass (Welford's update, one batch at a
  // time): linear in the batches, so a million-step log costs what its reading costs.
  std::vector<double> suffix_ss(nb + 1, 0.0);
  double mu = 0, m2 = 0;
  for (std::size_t j = nb; j-- > 0;) {
    const double count = static_cast<double>(nb - j);
    const double delta = z[j] - mu;
    mu += delta / count;
    m2 += delta * (z[j] - mu);
    suffix_ss[j] = m2;
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

std::optional<Drift> drift(const std::vector<double>& x) {
  const std::size_t b = batch_count(x.size());
  if (b < 3) return std::nullopt;
  const std::size_t size = x.size() / b, skip = x.size() - b * size;
  std::vector<double> z(b);
  for (std::size_t j = 0; j < b; ++j)
    z[j] = mean_of(x.data() + skip + j * size, x.data() + skip + (j + 1) * size);
  const double mx = static_cast<double>(b - 1) / 2, my = mean_of(z.data(), z.data() + b);
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

std::size_t batch_count(std::size_t n) {
  if (n < 4) return 0;
  const auto b = static_cast<std::size_t>(std::floor(std::sqrt(static_cast<double>(n))));
  return std::clamp<std::size_t>(b, 2, 20);
}

std::optional<BatchMeans> batch_means(const std::vector<double>& x, double confidence) {
  const std::size_t b = batch_count(x.size());
  if (b == 0) return std::nullopt;
  const std::size_t size = x.size() / b, skip = x.size() - b * size;
  std::vector<double> means(b);
  for (std::size_t j = 0; j < b; ++j)
    means[j] = mean_of(x.data() + skip + j * size, x.data() + skip + (j + 1) * size);
  return interval_from_batches(means, mean_of(means.data(), means.data() + b), size, confidence);
}

std::optional<BatchMeans> batch_ratio(const std::vector<double>& work, const std::vector<double>& time,
                                      double confidence) {
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

std::optional<Interval> bootstrap_percentile(const std::vector<double>& x, double pct, double confidence,
                                             int resamples, std::uint64_t seed) {
  const std::size_t n = x.size();
  if (n < 4 || resamples < 10) return std::nullopt;
  // Resamples of m = min(n, kBootstrapMaxResample) observations (m-out-of-n): above that size
  // the cost stays flat (a million-step log takes as long as 20 000 steps), and the spread of
  // the resampled percentiles around the estimate is scaled by sqrt(m / n) back to n.
  const std::size_t m = std::min(n, kBootstrapMaxResample);
  const auto block = static_cast<std::size_t>(std::ceil(std::cbrt(static_cast<double>(n))));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> start(0, n - 1);
  std::vector<double> stats, sample(m);
  stats.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (std::size_t filled = 0; filled < m;) {
      const std::size_t s = start(rng);
      for (std::size_t k = 0; k < block && filled < m; ++k) sample[filled++] = x[(s + k) % n];
    }
    stats.push_back(percentile(sample, pct));
  }
  const double a = (1.0 - confidence) / 2.0;
  const double estimate = percentile(x, pct);
  const double scale = std::sqrt(static_cast<double>(m) / static_cast<double>(n));
  const double lo = percentile(stats, 100.0 * a), hi = percentile(stats, 100.0 * (1.0 - a));
  if (m == n) return Interval{estimate, lo, hi};
  return Interval{estimate, estimate - (estimate - lo) * scale, estimate + (hi - estimate) * scale};
}

double lag1_autocorrelation(const std::vector<double>& x) {
  if (x.size() < 3) return 0.0;
  const double m = mean_of(x.data(), x.data() + x.size());
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

// Work per step (rate x seconds) over the steady records, when every one has the rate and at
// least one is non-zero (MaxText rounds rates to 3 decimals: all-zero says nothing).
std::optional<std::vector<double>> work_of(const std::vector<const StepRecord*>& recs,
                                           std::optional<double> StepRecord::*rate) {
  std::vector<double> w;
  bool any = false;
  for (const auto* r : recs) {
    if (!(r->*rate) || !std::isfinite(*(r->*rate))) return std::nullopt;
    w.push_back(*(r->*rate) * *r->seconds);
    any |= *(r->*rate) > 0;
  }
  if (!any) return std::nullopt;
  return w;
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

SteadyState steady_state(const std::vector<StepRecord>& steps, int devices, double confidence) {
  SteadyState s;
  std::vector<const StepRecord*> timed;
  for (const auto& r : steps)
    if (r.seconds && std::isfinite(*r.seconds) && !r.profiler_boundary) timed.push_back(&r);
  std::vector<double> t;
  for (const auto* r : timed) t.push_back(*r->seconds);
  const auto cut = mser5_truncation(t);
  if (!cut) {
    s.why = "only " + std::to_string(t.size()) + " timed step(s): no steady state to measure";
    return s;
  }
  // The first record always includes compilation (MaxText's step 0), whatever MSER says.
  s.first = std::max<std::size_t>(*cut, 1);
  s.n = t.size() > s.first ? t.size() - s.first : 0;
  if (s.n < 4) {
    s.why = "only " + std::to_string(s.n) + " steady-state step(s) after the warm-up: at least 4 are needed";
    return s;
  }
  const std::vector<double> st(t.begin() + static_cast<std::ptrdiff_t>(s.first), t.end());
  s.found = true;
  s.first_step = timed[s.first]->step;
  const std::vector<const StepRecord*> recs(timed.begin() + static_cast<std::ptrdiff_t>(s.first),
                                            timed.end());
  if (auto bm = batch_means(st, confidence)) {
    s.intervals["step_time_seconds"] = bm->ci;
    s.intervals["step_time_mean_ms"] = {bm->ci.estimate * 1e3, bm->ci.lo * 1e3, bm->ci.hi * 1e3};
  }
  std::vector<double> ms;
  for (double v : st) ms.push_back(v * 1e3);
  if (auto p = bootstrap_percentile(ms, 50, confidence)) s.intervals["step_time_p50_ms"] = *p;
  if (auto p = bootstrap_percentile(ms, 95, confidence)) s.intervals["step_time_p95_ms"] = *p;
  if (auto w = work_of(recs, &StepRecord::tokens_per_device))
    if (auto r = batch_ratio(*w, st, confidence)) {
      s.intervals["tokens_per_sec_per_gpu"] = r->ci;
      const double d = devices;
      s.intervals["tokens_per_sec_total"] = {r->ci.estimate * d, r->ci.lo * d, r->ci.hi * d};
    }
  if (auto w = work_of(recs, &StepRecord::tflops_per_device))
    if (auto r = batch_ratio(*w, st, confidence)) s.intervals["tflops_per_sec_per_gpu"] = r->ci;
  if (const auto d = drift(st); d && std::fabs(d->relative) > kMaxDrift && std::fabs(d->t) > kDriftT)
    widen_for_drift(s, *d);
  return s;
}

}  // namespace cvs
