// cvs certify's outputs beside certificate.json: certificate.html (one page: the verdict first,
// the excluded nodes and why, then each tier and the scaling ladder, the inputs and their
// provenance), junit.xml (a testcase per tier and per node), slurm_exclude.txt and
// healthy_cluster.json (the certified nodes).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cvs/certify/certificate.hpp"
#include "cvs/config/cluster.hpp"

namespace cvs::report {

std::string render_certificate_html(const Certificate& c);
// Writes the page, the JUnit file, slurm_exclude.txt and (with certified nodes) healthy_cluster.json
// into `dir`: the certificate reporter's files (reporters.hpp).
void write_certificate_files(const std::filesystem::path& dir, const Certificate& c, const Cluster& cluster);

}  // namespace cvs::report
