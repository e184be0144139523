#include "cvs/statistics/step_stats.hpp"

#include "cvs/base/enum_names.hpp"

#include "cvs/catalog/metric_catalog.hpp"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include "cvs/statistics/metrics.hpp"

namespace cvs {

double normal_quantile(double p) {
  return boost::math::quantile(boost::math::normal(), p);
}
namespace {

// A series the statistics read in place: a std::vector<double>, or a window of a DecimalColumn
// read as it is or as its reciprocal (seconds per token from Tokens/s).
struct VectorSlice {
  const std::vector<double>* v;
  std::size_t from = 0, n = 0;
  std::size_t size() const { return n; }
  double operator[](std::size_t i) const { return (*v)[from + i]; }
  VectorSlice window(std::size_t b, std::size_t len) const { return {v, from + b, len}; }
  // The values at the given ranks (0-based, ascending order).
  std::vector<double> order_statistics(const std::vector<std::size_t>& ranks) const {
    std::vector<double> copy(v->begin() + static_cast<long>(from), v->begin() + static_cast<long>(from + n));
    std::sort(copy.begin(), copy.end());
    std::vector<double> out;
    for (auto r : ranks) out.push_back(copy[r]);
    return out;
  }
};

struct ColumnSlice {
  const DecimalColumn* c;
  std::size_t from = 0, n = 0;
  bool reciprocal = false;
  std::size_t size() const { return n; }
  double operator[](std::size_t i) const {
    const double v = (*c)[from + i];
    return reciprocal ? 1.0 / v : v;
  }
  ColumnSlice window(std::size_t b, std::size_t len) const { return {c, from + b, len, reciprocal}; }
  std::vector<double> order_statistics(const std::vector<std::size_t>& ranks) const {
    // The reciprocal's k-th smallest is the column's (n - 1 - k)-th.
    std::vector<std::size_t> r = ranks;
    if (reciprocal)
      for (auto& k : r) k = n - 1 - k;
    auto v = c->order_statistics({{from, from + n}}, r);
    if (reciprocal)
      for (auto& x : v) x = 1.0 / x;
    return v;
  }
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

// Two-sided t and normal quantiles for `confidence`.
double t_quantile(double confidence, std::size_t df) {
  boost::math::students_t dist(static_cast<double>(df));
  return boost::math::quantile(dist, 1.0 - (1.0 - confidence) / 2.0);
}

double z_quantile(double confidence) {
  return normal_quantile(1.0 - (1.0 - confidence) / 2.0);
}

double median_in_place(std::vector<double>& v) {
  return percentile_in_place(v, 50);
}

// ---- warm-up ---------------------------------------------------------------------------------

// The steady level of x (the median of its second half after the compile cut, read at most 4096
// values apart evenly) and its robust standard deviation (1.4826 MAD, at least `floor`).
template <class S>
std::pair<double, double> steady_level(const S& x, double floor) {
  const std::size_t from = (kCompileCut + x.size()) / 2, len = x.size() - from;
  const std::size_t stride = (len + 4095) / 4096;
  std::vector<double> ref;
  for (std::size_t i = from; i < x.size(); i += stride) ref.push_back(x[i]);
  const double med = median_in_place(ref);
  for (auto& v : ref) v = std::fabs(v - med);
  const double sd = 1.4826 * median_in_place(ref);
  return {med, std::max({sd, floor, 1e-9 * std::fabs(med)})};
}

// A phase longer than a few steps (a neighbour still exiting, a cache warming) that ends in the
// first half: MSER's truncation (White 1997: the d minimising the variance of x[d..] over
// (N - d)^2), kept only when the steps before it differ from those after it by more than
// kPhaseZ standard errors (their correlation counted at the tail's lag-1 upper bound). A quiet
// tail is never chosen for being quiet: on a steady series the test fails and nothing is cut.
inline constexpr double kPhaseZ = 4.0;

template <class S>
std::size_t slow_phase_end(const S& x, std::size_t from) {
  const std::size_t n = x.size(), last = kCompileCut + (n - kCompileCut) / 2;
  if (last <= from + 1 || n - last < kMinSteadySteps) return from;
  double sum = 0, sq = 0;
  for (std::size_t i = from; i < n; ++i) sum += x[i], sq += x[i] * x[i];
  std::size_t best = from;
  double best_stat = std::numeric_limits<double>::infinity();
  for (std::size_t d = from; d <= last; ++d) {
    const double k = static_cast<double>(n - d), mean = sum / k;
    const double stat = std::max(0.0, sq - k * mean * mean) / (k * k);
    if (stat < best_stat * (1 - 1e-12)) best_stat = stat, best = d;
    sum -= x[d], sq -= x[d] * x[d];
  }
  if (best == from) return from;
  if (best < from + 2) return from;
  const auto before = x.window(from, best - from);
  const double head_mean = mean_of(before, 0, before.size());
  double h0 = 0;
  for (std::size_t i = 0; i < before.size(); ++i) h0 += (before[i] - head_mean) * (before[i] - head_mean);
  const auto tail = x.window(best, n - best);
  const double tail_mean = mean_of(tail, 0, tail.size());
  double c0 = 0, c1 = 0;
  for (std::size_t i = 0; i < tail.size(); ++i) {
    const double d = tail[i] - tail_mean;
    c0 += d * d;
    if (i + 1 < tail.size()) c1 += d * (tail[i + 1] - tail_mean);
  }
  const double nt = static_cast<double>(tail.size()), nh = static_cast<double>(best - from);
  const double lag1 = c0 > 0 ? c1 / c0 : 0.0;
  const double phi = std::clamp(lag1 + (1.0 + 3.0 * lag1) / nt, 0.0, 0.99);
  const double phi_u = std::min(0.99, phi + kLag1UpperZ * std::sqrt((1.0 - phi * phi) / nt));
  const double tau = (1.0 + phi_u) / (1.0 - phi_u);
  // Welch's standard error of the difference, each side's variance its own.
  const double se = std::sqrt(tau * (h0 / (nh - 1) / nh + c0 / (nt - 1) / nt));
  return std::fabs(head_mean - tail_mean) > kPhaseZ * se ? best : from;
}

template <class S>
std::size_t warmup_end_of(const S& x, double floor) {
  if (x.size() <= kCompileCut) return x.size();
  const auto [med, sd] = steady_level(x, floor);
  const std::size_t limit = kCompileCut + (x.size() - kCompileCut) / 3;
  std::size_t i = kCompileCut;
  while (i < limit && std::fabs(x[i] - med) > kWarmupBand * sd) ++i;
  return slow_phase_end(x, i);
}

// ---- the mean's interval ---------------------------------------------------------------------

// The lag-1 correlation of consecutive means of m steps of an AR(1) series with coefficient phi:
// Cov(B_j, B_j+1) / Var(B_j), both times m^2 / sigma^2.
double batch_lag1(double phi, std::size_t m) {
  if (phi <= 0) return 0.0;
  double var = static_cast<double>(m), pk = 1.0;
  for (std::size_t k = 1; k < m; ++k) {
    pk *= phi;
    var += 2.0 * static_cast<double>(m - k) * pk;
  }
  const double s = (1.0 - std::pow(phi, static_cast<double>(m))) / (1.0 - phi);
  return phi * s * s / var;
}

std::string fixed2(double v) {
  return fmt::format("{:.2f}", v);
}

template <class S>
MeanInterval mean_interval_of(const S& x, double confidence) {
  MeanInterval r;
  const std::size_t n = x.size();
  if (n < kMinSteadySteps) {
    r.why = std::to_string(n) + " steady-state steps: too few for an interval; run at least " +
            std::to_string(kMinSteadySteps) + " steady steps (after the compile step and the warm-up)";
    return r;
  }
  const double m = mean_of(x, 0, n);
  double c0 = 0, c1 = 0, c3 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = x[i] - m;
    c0 += d * d;
    c3 += d * d * d;
    if (i + 1 < n) c1 += d * (x[i + 1] - m);
  }
  const double nd = static_cast<double>(n);
  r.lag1 = c0 > 0 ? c1 / c0 : 0.0;
  // Kendall's bias correction, then the one-sided upper bound (its standard error sqrt((1 - phi^2) / n)).
  const double phi = std::clamp(r.lag1 + (1.0 + 3.0 * r.lag1) / nd, 0.0, 0.99);
  r.lag1_upper = std::min(0.99, phi + kLag1UpperZ * std::sqrt((1.0 - phi * phi) / nd));
  r.tau_upper = (1.0 + r.lag1_upper) / (1.0 - r.lag1_upper);
  const auto need = static_cast<std::size_t>(std::ceil(kBatchPerTau * r.tau_upper - 1e-9));
  std::size_t size = std::max(need, (n + kMaxBatches - 1) / kMaxBatches);
  std::size_t b = n / size;
  if (b < kMinBatches) {
    r.why = std::to_string(n) + " steady-state steps with lag-1 autocorrelation " + fixed2(r.lag1) +
            " (upper bound " + fixed2(r.lag1_upper) + "): means of " + std::to_string(need) +
            " steps are needed to be nearly independent, and " + std::to_string(kMinBatches) +
            " of them take " + std::to_string(kMinBatches * need) +
            " steady steps: too few steps for the correlation seen";
    return r;
  }
  b = std::min(b, kMaxBatches);
  size = n / b;
  const std::size_t skip = n - b * size;  // dropped from the front, nearest the warm-up
  std::vector<double> z(b);
  for (std::size_t j = 0; j < b; ++j) z[j] = mean_of(x, skip + j * size, skip + (j + 1) * size);
  const double zm = mean_of(z);
  double ss = 0;
  for (double v : z) ss += (v - zm) * (v - zm);
  r.batches = b;
  r.batch_size = size;
  if (!(ss > 0)) {
    r.why = "the " + std::to_string(n) +
            " steady-state step times do not vary: no spread to build an interval on";
    return r;
  }
  // What correlation the batches keep at phi_U: the grand mean's variance is larger, and the
  // batch means' sample variance smaller, than for independent batches.
  const double rho = batch_lag1(r.lag1_upper, size), bd = static_cast<double>(b);
  const double inflate = (1.0 + 2.0 * rho * (bd - 1.0) / bd) / std::max(0.1, 1.0 - 2.0 * rho / bd);
  const double se = std::sqrt(ss / (bd - 1.0) / bd * inflate);
  const double t = t_quantile(confidence, b - 1);
  // Step-time spikes skew the mean: half the Cornish-Fisher shift (Hall 1992) of the studentised
  // mean, the skewness at n / tau_U independent steps.
  const double skew = c0 > 0 ? (c3 / nd) / std::pow(c0 / nd, 1.5) : 0.0;
  const double shift = kSkewShare * se * skew / std::sqrt(nd / r.tau_upper) * (2.0 * t * t + 1.0) / 6.0;
  r.ci = Interval{zm, zm - t * se + shift, zm + t * se + shift};
  return r;
}

// ---- percentiles -----------------------------------------------------------------------------

// The 0-based ranks of the order statistics that bound the pct-th percentile of n values: the
// binomial count below it, n q +- z sqrt(n q (1 - q) tau).
struct Ranks {
  long long lo, hi;
};
Ranks percentile_ranks(std::size_t n, double pct, double confidence, double tau) {
  const double q = pct / 100.0, nq = static_cast<double>(n) * q;
  const double spread = z_quantile(confidence) * std::sqrt(static_cast<double>(n) * q * (1.0 - q) * tau);
  return {static_cast<long long>(std::floor(nq - spread)) - 1,
          static_cast<long long>(std::ceil(nq + spread))};
}

// The least n for which both ranks fall inside the series.
std::size_t steps_for_percentile(double pct, double confidence, double tau) {
  std::size_t n = 2;
  for (;; ++n) {
    const auto r = percentile_ranks(n, pct, confidence, tau);
    if (r.lo >= 0 && r.hi <= static_cast<long long>(n) - 1) return n;
  }
}

template <class S>
std::optional<Interval> percentile_interval_of(const S& x, double pct, double confidence, double tau) {
  const std::size_t n = x.size();
  if (n < 2) return std::nullopt;
  const auto r = percentile_ranks(n, pct, confidence, std::max(1.0, tau));
  if (r.lo < 0 || r.hi > static_cast<long long>(n) - 1) return std::nullopt;
  const auto pr = percentile_rank(n, pct);
  const auto v =
      x.order_statistics({pr.lo, pr.hi, static_cast<std::size_t>(r.lo), static_cast<std::size_t>(r.hi)});
  return Interval{pr.at(v[0], v[1]), v[2], v[3]};
}

// ---- drift -----------------------------------------------------------------------------------

template <class S>
std::optional<Drift> drift_of(const S& x, double confidence) {
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
  // The line's levels at the window's first and last step (half a batch beyond the outer batches'
  // centres), each known to +/- t(b - 2) x its fitted value's standard error; the band holds both.
  const double half = 0.5 - 0.5 / static_cast<double>(size), first = -half - mx, last = mx + half;
  const double s2 = sse / static_cast<double>(b - 2), tq = t_quantile(confidence, b - 2);
  const auto reach = [&](double at) {
    return tq * std::sqrt(s2 * (1.0 / static_cast<double>(b) + at * at / sxx));
  };
  Drift d;
  d.start = my + slope * first;
  d.end = my + slope * last;
  d.mean = my;
  d.lo = std::min(d.start - reach(first), d.end - reach(last));
  d.hi = std::max(d.start + reach(first), d.end + reach(last));
  d.relative = my != 0 ? (d.end - d.start) / my : 0;
  d.batches = b;
  d.batch_size = size;
  d.t =
      se > 0 ? slope / se : (slope == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), slope));
  return d;
}

// ---- work per step ---------------------------------------------------------------------------

// The intersection of [lo_i, hi_i] over the records bound(i) gives (nullopt: the record says
// nothing); nullopt when no record bounds it or the bounds do not meet.
template <class Bound>
std::optional<Range> intersect(std::size_t n, Bound bound) {
  Range r{0, std::numeric_limits<double>::infinity()};
  bool any = false;
  for (std::size_t i = 0; i < n; ++i)
    if (const auto b = bound(i)) {
      r.lo = std::max(r.lo, b->lo);
      r.hi = std::min(r.hi, b->hi);
      any = true;
    }
  if (!any || !(r.lo <= r.hi) || !std::isfinite(r.hi)) return std::nullopt;
  return r;
}

// A value printed at resolution q lies within q/2 of it; an exact one within its rounding error.
Range around(double v, double q) {
  const double half = q > 0 ? q / 2 : 1e-12 * std::fabs(v);
  return {v - half, v + half};
}

// work = rate x seconds, from one record's printed figures.
std::optional<Range> work_bound(double seconds, double rate, double qs, double qr) {
  if (!std::isfinite(seconds) || !std::isfinite(rate) || !(rate > 0)) return std::nullopt;
  const Range s = around(seconds, qs), r = around(rate, qr);
  return Range{std::max(0.0, s.lo) * std::max(0.0, r.lo), s.hi * r.hi};
}

// F / K = TFLOP/s / Tokens/s, from one record's printed figures.
std::optional<Range> ratio_bound(double tflops, double tokens, double qf, double qt) {
  if (!std::isfinite(tflops) || !std::isfinite(tokens) || !(tokens > 0)) return std::nullopt;
  const Range f = around(tflops, qf), t = around(tokens, qt);
  if (!(t.lo > 0)) return std::nullopt;
  return Range{std::max(0.0, f.lo) / t.hi, f.hi / t.lo};
}

double resolution(const DecimalColumn& c) {
  return c.width() == 8 ? 0.0 : kPrintResolution;
}

// Whether every record in [from, n) has a finite, positive figure in c.
bool all_positive(const DecimalColumn& c, std::size_t from, std::size_t n) {
  for (std::size_t i = from; i < n; ++i)
    if (!(c[i] > 0) || !std::isfinite(c[i])) return false;
  return true;
}

// ---- assembling the steady state -------------------------------------------------------------

Interval scaled(const Interval& i, double f) {
  return {i.estimate * f, i.lo * f, i.hi * f};
}

// An interval of a positive quantity with a bound at or below 0 says nothing (a spread too wide
// for the steps, a rate printed as 0.000): it is left out, with the reason.
void put(SteadyState& s, const std::string& metric, const Interval& i, const std::string& missing_why) {
  if (i.lo > 0 && std::isfinite(i.hi) && i.hi > i.lo)
    s.intervals[metric] = i;
  else
    s.missing[metric] = missing_why;
}

struct Source {
  TimeSource kind;
  bool reciprocal;      // the core series is 1 / Tokens/s
  Range scale{1, 1};    // step time = core x scale (tokens per step)
  double additive = 0;  // every step-time bound moves out by this (half the resolution)
};

Source choose_source(const TimedSeries& timed, SteadyState& s) {
  const DecimalColumn &secs = timed.seconds(), &tok = timed.tokens_per_device();
  const double qs = resolution(secs), qt = resolution(tok);
  const std::size_t n = timed.size();
  if (all_positive(tok, kCompileCut, n)) {
    const auto k = intersect(n, [&](std::size_t i) { return work_bound(secs[i], tok[i], qs, qt); });
    if (k) {
      s.tokens_per_step = *k;
      return {qs > 0 ? TimeSource::TokensRate : TimeSource::FullPrecision, true, *k, 0};
    }
    s.note =
        "the printed seconds and Tokens/s/device disagree on the tokens per step: step times from the "
        "seconds";
  }
  return {qs > 0 ? TimeSource::PrintedSeconds : TimeSource::FullPrecision, false, {1, 1}, qs / 2};
}

// The TFLOP/s interval: from the tokens rate (TFLOPs per token pinned by both printed rates) or,
// without tokens, from the step time (TFLOPs per step pinned by the printed rate and seconds).
void tflops_interval(SteadyState& s, const TimedSeries& timed, const Source& src, const Interval& tokens,
                     const Interval& seconds) {
  const DecimalColumn &tf = timed.tflops_per_device(), &tok = timed.tokens_per_device(),
                      &secs = timed.seconds();
  for (std::size_t i = s.first; i < s.first + s.n; ++i)
    if (!std::isfinite(tf[i])) {
      s.missing["tflops_per_sec_per_gpu"] =
          "TFLOP/s/device is absent on steady step " + std::to_string(timed.step_at(i)) + ": no interval";
      return;
    }
  const double qf = resolution(tf);
  const std::string coarse =
      "TFLOP/s/device is printed with 3 decimals and reads 0.000 (or too near it) here: no interval; set "
      "maxtext_config.metrics_file for full precision";
  const std::string apart = "TFLOP/s/device is not the same work per step on every step: no interval";
  if (src.reciprocal) {
    const auto r = intersect(timed.size(),
                             [&](std::size_t i) { return ratio_bound(tf[i], tok[i], qf, resolution(tok)); });
    if (!r) {
      s.missing["tflops_per_sec_per_gpu"] = apart;
      return;
    }
    put(s, "tflops_per_sec_per_gpu", {r->mid() * tokens.estimate, r->lo * tokens.lo, r->hi * tokens.hi},
        coarse);
    return;
  }
  const auto f = intersect(timed.size(),
                           [&](std::size_t i) { return work_bound(secs[i], tf[i], resolution(secs), qf); });
  if (!f) {
    s.missing["tflops_per_sec_per_gpu"] = apart;
    return;
  }
  put(s, "tflops_per_sec_per_gpu", {f->mid() / seconds.estimate, f->lo / seconds.hi, f->hi / seconds.lo},
      coarse);
}

void percentile_intervals(SteadyState& s, const ColumnSlice& core, const Source& src, double tau,
                          double confidence) {
  for (auto [pct, name] : {std::pair{50.0, "step_time_p50_ms"}, std::pair{95.0, "step_time_p95_ms"}}) {
    const auto p = percentile_interval_of(core, pct, confidence, tau);
    if (!p) {
      s.missing[name] = "p" + std::to_string(static_cast<int>(pct)) + " of " + std::to_string(s.n) +
                        " steady-state steps: its order-statistic interval needs at least " +
                        std::to_string(steps_for_percentile(pct, confidence, tau)) + " steps";
      continue;
    }
    put(s, name,
        {p->estimate * src.scale.mid() * 1e3, (p->lo * src.scale.lo - src.additive) * 1e3,
         (p->hi * src.scale.hi + src.additive) * 1e3},
        "");
  }
}

// The speed metrics' intervals from the interval c of the window's core series (seconds, or
// 1 / Tokens/s when src.reciprocal).
void speed_intervals(SteadyState& s, const TimedSeries& timed, const Source& src, const Interval& c,
                     int devices) {
  const std::string wide =
      "the interval of the mean reaches 0: the steady steps vary too much for an interval";
  const Interval secs{c.estimate * src.scale.mid(), c.lo * src.scale.lo - src.additive,
                      c.hi * src.scale.hi + src.additive};
  put(s, "step_time_seconds", secs, wide);
  put(s, "step_time_mean_ms", scaled(secs, 1e3), wide);
  Interval tokens{};
  if (src.reciprocal && c.lo > 0) {
    tokens = {1.0 / c.estimate, 1.0 / c.hi, 1.0 / c.lo};
    put(s, "tokens_per_sec_per_gpu", tokens, wide);
    put(s, "tokens_per_sec_total", scaled(tokens, devices), wide);
  }
  tflops_interval(s, timed, src, tokens, secs);
}

// A window that drifts describes no single speed: its intervals span the trend's fitted start and
// end levels, each with its own uncertainty (Drift::lo, hi), so only a gate that the whole trend
// clears, or fails, is decided; the percentiles' intervals widen by the same factors.
void drift_intervals(SteadyState& s, const TimedSeries& timed, const Source& src, const ColumnSlice& window,
                     const Drift& d, int devices, bool percentiles) {
  s.drift = d;
  s.batches = d.batches;
  s.batch_size = d.batch_size;
  s.first += s.n - d.batches * d.batch_size;
  s.n = d.batches * d.batch_size;
  s.first_step = timed.step_at(s.first);
  const MeanInterval mi = mean_interval_of(window, s.confidence);
  s.lag1 = mi.lag1;
  s.lag1_upper = mi.lag1_upper;
  if (!(d.lo > 0)) {
    s.why = drift_note(d, s.n) + "; its band reaches 0: no interval";
    return;
  }
  speed_intervals(s, timed, src, {d.mean, d.lo, d.hi}, devices);
  if (!percentiles) return;
  percentile_intervals(s, window.window(window.n - s.n, s.n), src, mi.tau_upper, s.confidence);
  for (const char* name : {"step_time_p50_ms", "step_time_p95_ms"})
    if (auto it = s.intervals.find(name); it != s.intervals.end()) {
      it->second.lo *= d.lo / d.mean;
      it->second.hi *= d.hi / d.mean;
    }
}

}  // namespace

std::size_t warmup_end(const std::vector<double>& x) {
  return warmup_end_of(VectorSlice{&x, 0, x.size()}, 0.0);
}

MeanInterval mean_interval(const std::vector<double>& x, double confidence) {
  return mean_interval_of(VectorSlice{&x, 0, x.size()}, confidence);
}

std::optional<Interval> percentile_interval(const std::vector<double>& x, double pct, double confidence,
                                            double tau) {
  return percentile_interval_of(VectorSlice{&x, 0, x.size()}, pct, confidence, tau);
}

std::optional<Range> work_per_step(const std::vector<double>& seconds, const std::vector<double>& rate,
                                   double seconds_resolution, double rate_resolution) {
  return intersect(std::min(seconds.size(), rate.size()), [&](std::size_t i) {
    return work_bound(seconds[i], rate[i], seconds_resolution, rate_resolution);
  });
}

std::optional<Drift> drift(const std::vector<double>& x, double confidence) {
  return drift_of(VectorSlice{&x, 0, x.size()}, confidence);
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

SteadyState steady_state(const TimedSeries& timed, int devices, double confidence, bool percentiles) {
  SteadyState s;
  s.confidence = confidence;
  const std::size_t total = timed.size();
  const Source src = choose_source(timed, s);
  s.source = src.kind;
  const DecimalColumn& base = src.reciprocal ? timed.tokens_per_device() : timed.seconds();
  const ColumnSlice all{&base, 0, total, src.reciprocal};
  const std::size_t first = warmup_end_of(all, src.reciprocal ? 0.0 : resolution(timed.seconds()));
  if (first + 2 > total) {
    s.why = "only " + std::to_string(total) +
            " timed step(s): no steady state after the compile step and the warm-up";
    return s;
  }
  s.found = true;
  s.first = first;
  s.n = total - first;
  s.first_step = timed.step_at(first);
  const ColumnSlice window = all.window(first, s.n);
  if (const auto d = drift_of(window, confidence);
      d && std::fabs(d->relative) > kMaxDrift && std::fabs(d->t) > kDriftT) {
    drift_intervals(s, timed, src, window, *d, devices, percentiles);
    return s;
  }
  const MeanInterval mi = mean_interval_of(window, confidence);
  s.lag1 = mi.lag1;
  s.lag1_upper = mi.lag1_upper;
  if (!mi.ci) {
    s.why = mi.why;
    return s;
  }
  // The interval covers the batched steps: the leftover at the front is not in it.
  s.batches = mi.batches;
  s.batch_size = mi.batch_size;
  s.first += s.n - mi.batches * mi.batch_size;
  s.n = mi.batches * mi.batch_size;
  s.first_step = timed.step_at(s.first);
  speed_intervals(s, timed, src, *mi.ci, devices);
  if (percentiles) percentile_intervals(s, all.window(s.first, s.n), src, mi.tau_upper, confidence);
  return s;
}

}  // namespace cvs
