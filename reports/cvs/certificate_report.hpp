// cvs certify's outputs beside certificate.json: certificate.html (one page: the verdict first,
// the excluded nodes and why, then each tier and the scaling ladder, the inputs and their
// provenance), junit.xml (a testcase per tier and per node), slurm_exclude.txt and
// healthy_cluster.json (the certified nodes).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cvs/exec/cluster.hpp"
#include "cvs/fleet/certificate.hpp"

namespace cvs::report {

std::string render_certificate_html(const Certificate& c);
std::string render_certificate_junit(const Certificate& c);
// Writes the four files into `dir`; a line for each written.
std::vector<std::string> write_certificate_files(const std::filesystem::path& dir, const Certificate& c,
                                                 const Cluster& cluster);

}  // namespace cvs::report
