// A certification in the history store: its entry (kind "certify"), and the folder reader that
// knows a certification besides what the history layer reads (history::entry_of_folder).
#pragma once

#include <filesystem>

#include "cvs/certify/certificate.hpp"
#include "cvs/history/store.hpp"

namespace cvs::certify {

// A certification's entry (kind "certify"): its verdict as the status (CERTIFIED PASS, NOT CERTIFIED
// FAIL, INCOMPLETE INCONCLUSIVE, ERROR), every host (certified PASS; excluded FAIL, a suspect with
// its tier's words; neither: none), each rung of the ladder as the sweep "rung-<nodes>" (its
// tokens/s/GPU, its scaling efficiency with the interval and verdict), each decided tier's times.
history::SessionEntry entry_of_certificate(const Certificate& c, const std::filesystem::path& folder);
// Whatever a folder holds: a certification (certificate.json), a fleet run (fleet.json), a session
// (results.json), or a calibration file; history::StoreError when it is none of these.
history::SessionEntry entry_of_folder(const std::filesystem::path& path);

}  // namespace cvs::certify
