// A metric's history across sessions: where its level changed (change points), which provenance
// fields changed there (`cvs history trend`; its page is reports/cvs/trend_page.hpp).
//
// Change points by binary segmentation: in a run of sessions, the split that maximises Welch's
// t between the mean estimates before and after it (each side at least kMinSegment sessions) is a
// change point when t > kChangeT (the maximum over every split of a steady series stays far below
// it) and the level moved at least min_change_pct; each side is searched again.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "cvs/history/store.hpp"

namespace cvs::history {

inline constexpr std::size_t kMinSegment = 3;
inline constexpr double kChangeT = 6.0;

struct ChangePoint {
  std::size_t index = 0;  // the first session of the new level
  double before = 0, after = 0, change_pct = 0, t = 0;
  // The provenance fields that differ between the session before and this one: field, old, new.
  std::vector<std::tuple<std::string, std::string, std::string>> changed;
  std::string
      words;  // "tokens_per_sec_per_gpu -11 % from 2026-11-02, when maxtext_version 0.2.5 -> 0.2.6 changed"
};

std::vector<ChangePoint> change_points(const std::vector<TrendPoint>& points, const std::string& metric,
                                       double min_change_pct = 3.0);

// Every provenance change between consecutive sessions: (index of the later session, the fields).
std::vector<std::pair<std::size_t, std::vector<std::tuple<std::string, std::string, std::string>>>>
provenance_changes(const std::vector<TrendPoint>& points);

}  // namespace cvs::history
