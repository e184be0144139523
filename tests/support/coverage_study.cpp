#include "coverage_study.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <random>

#include "cvs/statistics/step_stats.hpp"

namespace cvs::study {
namespace {

constexpr double kTokensPerStep = 4096;  // per device: batch x sequence length
constexpr double kTflopsPerStep = 0.8;
constexpr double kHeavyShare = 0.10, kHeavyFactor = 3.0;

double print3(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

struct Run {
  std::vector<StepRecord> steps;
  double true_ms = 0, true_tokens = 0;
};

double phi_of(Noise n) {
  switch (n) {
    case Noise::Ar03:
      return 0.3;
    case Noise::Ar06:
      return 0.6;
    case Noise::Ar09:
      return 0.9;
    default:
      return 0.0;
  }
}

Run simulate(Noise noise, std::size_t n, std::mt19937_64& g) {
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> z(0, 1);
  const double mu = 0.008 + 0.012 * u(g);
  const double cv = std::exp(std::log(0.005) + (std::log(0.08) - std::log(0.005)) * u(g));
  const double phi = phi_of(noise);
  std::vector<double> t = {mu * (20 + 80 * u(g)), mu * std::exp(std::log(0.2) + std::log(50.0) * u(g))};
  for (double f : {2.0, 1.5, 1.2}) t.push_back(mu * f * (1 + cv * z(g)));
  double e = cv * mu * z(g);  // AR(1) state, from its stationary distribution
  for (std::size_t i = 0; i < n; ++i) {
    e = phi * e + std::sqrt(1 - phi * phi) * cv * mu * z(g);
    double v = mu + e;
    if (noise == Noise::Heavy && u(g) < kHeavyShare) v = mu * kHeavyFactor + e;
    t.push_back(std::max(v, 1e-5));
  }
  Run r;
  for (std::size_t i = 0; i < t.size(); ++i) {
    StepRecord s;
    s.step = static_cast<long long>(i);
    s.seconds = print3(t[i]);
    s.tokens_per_device = print3(kTokensPerStep / t[i]);
    s.tflops_per_device = print3(kTflopsPerStep / t[i]);
    s.loss = 5.0;
    r.steps.push_back(s);
  }
  const double mean = noise == Noise::Heavy ? mu * (1 + (kHeavyFactor - 1) * kHeavyShare) : mu;
  r.true_ms = mean * 1e3;
  r.true_tokens = kTokensPerStep / mean;
  return r;
}

// ---- the procedure before #27, as it was (for the test that shows it fails) -----------------

double tq(double confidence, double df) {
  boost::math::students_t d(df);
  return boost::math::quantile(d, 1 - (1 - confidence) / 2);
}

std::size_t mser5(const std::vector<double>& x) {
  const std::size_t m = x.size() >= 10 ? 5 : 1, nb = x.size() / m;
  std::size_t best = 0;
  double best_stat = INFINITY;
  for (std::size_t d = 0; 2 * d <= nb && d + 2 <= nb; ++d) {
    double mean = 0, ss = 0;
    std::vector<double> zs;
    for (std::size_t j = d; j < nb; ++j) {
      double s = 0;
      for (std::size_t i = j * m; i < (j + 1) * m; ++i) s += x[i];
      zs.push_back(s / static_cast<double>(m));
    }
    for (double v : zs) mean += v / static_cast<double>(zs.size());
    for (double v : zs) ss += (v - mean) * (v - mean);
    const double k = static_cast<double>(nb - d), stat = ss / (k * k);
    if (stat < best_stat * (1 - 1e-12)) {
      best_stat = stat;
      best = d;
    }
  }
  return best * m;
}

struct Old {
  bool ok = false;
  double ms_lo = 0, ms_hi = 0, tok_lo = 0, tok_hi = 0;
};

Old old_estimator(const std::vector<StepRecord>& steps) {
  std::vector<double> secs, work;
  for (const auto& s : steps) {
    secs.push_back(*s.seconds);
    work.push_back(*s.tokens_per_device * *s.seconds);
  }
  const std::size_t first = std::max<std::size_t>(mser5(secs), 1), n = secs.size() - first;
  Old o;
  if (n < 4) return o;
  const std::size_t b =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::sqrt(static_cast<double>(n))), 2, 20);
  const std::size_t size = n / b, skip = first + n - b * size;
  std::vector<double> means(b), rates(b);
  double all_w = 0, all_t = 0;
  for (std::size_t j = 0; j < b; ++j) {
    double w = 0, t = 0;
    for (std::size_t i = skip + j * size; i < skip + (j + 1) * size; ++i) {
      w += work[i];
      t += secs[i];
    }
    means[j] = t / static_cast<double>(size);
    rates[j] = t > 0 ? w / t : 0;
    all_w += w;
    all_t += t;
  }
  auto ci = [&](const std::vector<double>& v, double centre, double& lo, double& hi) {
    double m = 0, ss = 0;
    for (double x : v) m += x / static_cast<double>(v.size());
    for (double x : v) ss += (x - m) * (x - m);
    const double h = tq(0.95, static_cast<double>(b - 1)) *
                     std::sqrt(ss / static_cast<double>(b - 1) / static_cast<double>(b));
    lo = centre - h;
    hi = centre + h;
  };
  double m = 0;
  for (double x : means) m += x / static_cast<double>(b);
  ci(means, m, o.ms_lo, o.ms_hi);
  o.ms_lo *= 1e3;
  o.ms_hi *= 1e3;
  ci(rates, all_t > 0 ? all_w / all_t : 0, o.tok_lo, o.tok_hi);
  o.ok = true;
  return o;
}

void count(Tally& t, bool decided, double lo, double hi, double truth) {
  if (!decided) return;
  ++t.decided;
  t.covered += lo <= truth && truth <= hi;
}

}  // namespace

const std::vector<Noise>& all_noises() {
  static const std::vector<Noise> v = {Noise::Iid, Noise::Ar03, Noise::Ar06, Noise::Ar09, Noise::Heavy};
  return v;
}

const char* to_string(Noise n) {
  switch (n) {
    case Noise::Iid:
      return "iid";
    case Noise::Ar03:
      return "AR(1) 0.3";
    case Noise::Ar06:
      return "AR(1) 0.6";
    case Noise::Ar09:
      return "AR(1) 0.9";
    case Noise::Heavy:
      return "heavy (10 % 3x)";
  }
  return "?";
}

const std::vector<std::size_t>& study_lengths() {
  static const std::vector<std::size_t> v = {12, 20, 30, 60, 120, 500};
  return v;
}

CellResult run_cell(Noise noise, std::size_t n, std::size_t reps, std::uint64_t seed, Estimator estimator) {
  CellResult c{noise, n, reps, {}, {}};
  std::mt19937_64 g(seed * 1000003 + static_cast<std::uint64_t>(noise) * 1009 + n);
  for (std::size_t r = 0; r < reps; ++r) {
    const Run run = simulate(noise, n, g);
    if (estimator == Estimator::Mser5SqrtBatches) {
      const Old o = old_estimator(run.steps);
      count(c.step_time, o.ok, o.ms_lo, o.ms_hi, run.true_ms);
      count(c.tokens, o.ok, o.tok_lo, o.tok_hi, run.true_tokens);
      continue;
    }
    TimedSeries timed;
    for (const auto& s : run.steps) timed.add(s);
    const SteadyState s = steady_state(timed, 1, 0.95, false);
    const auto ms = s.intervals.find("step_time_mean_ms"), tok = s.intervals.find("tokens_per_sec_per_gpu");
    count(c.step_time, ms != s.intervals.end(), ms != s.intervals.end() ? ms->second.lo : 0,
          ms != s.intervals.end() ? ms->second.hi : 0, run.true_ms);
    count(c.tokens, tok != s.intervals.end(), tok != s.intervals.end() ? tok->second.lo : 0,
          tok != s.intervals.end() ? tok->second.hi : 0, run.true_tokens);
  }
  return c;
}

CellVerdict judge(const Tally& t, std::size_t reps) {
  CellVerdict v;
  const auto all = static_cast<double>(reps);
  v.decided = static_cast<double>(t.decided) / all;
  v.missed = static_cast<double>(t.decided - t.covered) / all;
  v.coverage = t.decided ? static_cast<double>(t.covered) / static_cast<double>(t.decided) : 0.0;
  v.inconclusive = v.decided < 0.5;
  v.ok = v.missed <= 0.07 && (v.inconclusive || (v.coverage >= 0.93 && v.coverage <= 0.98));
  if (v.inconclusive)
    v.text = fmt::format("INCONCLUSIVE ({:.0f} % given, {:.1f} % missed)", 100 * v.decided, 100 * v.missed);
  else
    v.text = fmt::format("{:.1f} % ({:.0f} % given)", 100 * v.coverage, 100 * v.decided);
  return v;
}

}  // namespace cvs::study
