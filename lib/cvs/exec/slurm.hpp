// A Slurm allocation: salloc for N nodes (the hosts in rank order, from squeue and scontrol), and
// its release (scancel, then wait until squeue no longer lists it). The launcher allocates a
// cluster file's `scheduler: slurm` nodes with it; fleet mode holds one allocation for every node's
// run (each run then names the job and its host: slurm.job_id and slurm.nodelist).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "cvs/config/cluster.hpp"

namespace cvs {

struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> hosts;  // rank order
  std::string error;               // why there is none ("" when granted)
  bool ok() const { return error.empty(); }
};

// salloc --no-shell for options.nodes nodes (partition, account, time limit, extra args); a job
// granted but whose hosts cannot be read is released again.
SlurmAllocation slurm_allocate(const SlurmOptions& options, std::chrono::milliseconds timeout);

// scancel the job and wait until Slurm no longer lists it. "" when gone, else why not.
std::string slurm_release(const std::string& job_id);

// The scontrol command that drains `host` with the reason "cvs-maxtext: <evidence>" (quotes, tabs
// and newlines made spaces; at most 200 characters, Slurm's reason is one line).
std::vector<std::string> slurm_drain_argv(const std::string& host, const std::string& evidence);

}  // namespace cvs
