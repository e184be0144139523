#!/usr/bin/env python3
"""Known answers for tests/unit/step_stats_test.cpp (KnownAnswers.*), computed independently of
the C++ code from the rules as lib/cvs/results/step_stats.hpp states them, with numpy and scipy
(the MaxText venv has both): `.venv/bin/python3 tests/unit/known_answers.py` prints them."""
import math

import numpy as np
from scipy import stats


def series():
    # A compile step, an irregular step 1, a two-step warm-up, then 40 steady steps.
    steady = [10 + 0.05 * ((i * 37) % 17 - 8) + 0.03 * ((i * 11) % 7) for i in range(40)]
    return [400.0, 3.0, 25.0, 14.0] + steady


def warmup_end(x, floor=0.0):
    cut = 2
    if len(x) <= cut:
        return len(x)
    start = (cut + len(x)) // 2
    ref = np.array(x[start:])  # fewer than 4096: every value
    med = np.percentile(ref, 50)  # linear interpolation
    sd = max(1.4826 * np.percentile(np.abs(ref - med), 50), floor, 1e-9 * abs(med))
    limit = cut + (len(x) - cut) // 3
    i = cut
    while i < limit and abs(x[i] - med) > 4.0 * sd:
        i += 1
    return i


def mean_interval(x, confidence):
    x = np.array(x, dtype=float)
    n = len(x)
    m = x.mean()
    d = x - m
    c0, c1, c3 = (d * d).sum(), (d[:-1] * d[1:]).sum(), (d ** 3).sum()
    lag1 = c1 / c0
    phi = min(max(lag1 + (1 + 3 * lag1) / n, 0.0), 0.99)
    phi_u = min(0.99, phi + 1.645 * math.sqrt((1 - phi * phi) / n))
    tau = (1 + phi_u) / (1 - phi_u)
    need = math.ceil(2.0 * tau - 1e-9)
    size = max(need, -(-n // 20))
    b = n // size
    assert b >= 5
    b = min(b, 20)
    size = n // b
    skip = n - b * size
    z = x[skip:].reshape(b, size).mean(axis=1)
    zm = z.mean()
    ss = ((z - zm) ** 2).sum()
    # AR(1) batch-mean lag-1 correlation at phi_u
    var = size + sum(2 * (size - k) * phi_u ** k for k in range(1, size))
    s = (1 - phi_u ** size) / (1 - phi_u)
    rho = phi_u * s * s / var
    inflate = (1 + 2 * rho * (b - 1) / b) / max(0.1, 1 - 2 * rho / b)
    se = math.sqrt(ss / (b - 1) / b * inflate)
    t = stats.t.ppf(1 - (1 - confidence) / 2, b - 1)
    skew = (c3 / n) / (c0 / n) ** 1.5
    shift = 0.5 * se * skew / math.sqrt(n / tau) * (2 * t * t + 1) / 6
    return dict(lag1=lag1, lag1_upper=phi_u, tau=tau, batches=b, size=size, t=t,
                estimate=zm, lo=zm - t * se + shift, hi=zm + t * se + shift)


def percentile_interval(x, pct, confidence, tau):
    x = np.sort(np.array(x, dtype=float))
    n = len(x)
    q = pct / 100
    spread = stats.norm.ppf(1 - (1 - confidence) / 2) * math.sqrt(n * q * (1 - q) * tau)
    lo, hi = math.floor(n * q - spread) - 1, math.ceil(n * q + spread)
    if lo < 0 or hi > n - 1:
        return None
    return dict(estimate=float(np.percentile(x, pct)), lo=x[lo], hi=x[hi], lo_rank=lo, hi_rank=hi)


def work_per_step(seconds, rate, qs, qr):
    lo = max((s - qs / 2) * (r - qr / 2) for s, r in zip(seconds, rate))
    hi = min((s + qs / 2) * (r + qr / 2) for s, r in zip(seconds, rate))
    return lo, hi


def drift_series():
    # 100 steps clocking down from 10 to 12.97, a little noise: a drift.
    return [10 + 0.03 * i + 0.05 * ((i * 37) % 11 - 5) for i in range(100)]


def drift(x, confidence):
    x = np.array(x, dtype=float)
    n = len(x)
    b = min(max(int(math.isqrt(n)), 2), 20)
    size = n // b
    skip = n - b * size
    z = x[skip:].reshape(b, size).mean(axis=1)
    j = np.arange(b, dtype=float)
    fit = stats.linregress(j, z)
    resid = z - (fit.intercept + fit.slope * j)
    mx = (b - 1) / 2
    sxx = ((j - mx) ** 2).sum()
    # the line at the window's first and last step: half a batch beyond the outer batches' centres
    first, last = -0.5 + 0.5 / size, b - 0.5 - 0.5 / size
    start, end = fit.intercept + fit.slope * first, fit.intercept + fit.slope * last
    tq = stats.t.ppf(1 - (1 - confidence) / 2, b - 2)
    s2 = (resid ** 2).sum() / (b - 2)
    reach = lambda at: tq * math.sqrt(s2 * (1 / b + (at - mx) ** 2 / sxx))
    return dict(batches=b, size=size, start=start, end=end, relative=(end - start) / z.mean(),
                t=fit.slope / fit.stderr, lo=min(start - reach(first), end - reach(last)),
                hi=max(start + reach(first), end + reach(last)))


def main():
    x = series()
    w = warmup_end(x)
    print("warmup_end", w)
    mi = mean_interval(x[w:], 0.95)
    for k, v in mi.items():
        print("mean_interval", k, repr(v))
    print("t_quantile(0.95, 4)", repr(stats.t.ppf(0.975, 4)))
    for pct in (50, 95):
        print("percentile_interval", pct, percentile_interval(x[w:], pct, 0.95, mi["tau"]))
    # printed 3-decimal steps of 512 tokens (the quantized case): true 12.4, 12.35, 12.45 ms
    secs = [0.012, 0.012, 0.012]
    rate = [round(512 / t, 3) for t in (0.0124, 0.01235, 0.01245)]
    for k, v in drift(drift_series(), 0.95).items():
        print("drift", k, repr(v))
    print("rates", rate, "work_per_step", work_per_step(secs, rate, 1e-3, 1e-3))


main()
