#include "cvs/exec/transport.hpp"

#include "cvs/base/text.hpp"

#include <filesystem>
#include <stdexcept>

namespace cvs {

Transport::Transport(const Cluster& cluster) : cluster_(cluster) {
  control_dir_ = cluster.ssh.control_dir;
  if (control_dir_.empty())
    control_dir_ = (std::filesystem::temp_directory_path() / ("cvs-ssh-" + os_user())).string();
  bool any_ssh = false;
  for (const auto& n : cluster.nodes) any_ssh |= n.transport == "ssh";
  if (any_ssh) {
    std::error_code ec;
    std::filesystem::create_directories(control_dir_, ec);
    std::filesystem::permissions(control_dir_, std::filesystem::perms::owner_all, ec);
  }
}

std::vector<std::string> Transport::wrap(const Node& node, const std::vector<std::string>& argv) const {
  if (node.transport == "local") return argv;
  if (node.transport == "slurm") {
    const auto& s = cluster_.slurm;
    if (s.job_id.empty()) throw std::logic_error("slurm node " + node.name + " used before the allocation");
    std::vector<std::string> v = {"srun",       "--jobid=" + s.job_id,     "--nodes=1",
                                  "--ntasks=1", "--nodelist=" + node.host, "--overlap",
                                  "--quiet",    "--kill-on-bad-exit=1"};
    if (!s.container_image.empty()) v.push_back("--container-image=" + s.container_image);
    if (!s.container_mounts.empty()) v.push_back("--container-mounts=" + s.container_mounts);
    v.push_back("--");
    v.insert(v.end(), argv.begin(), argv.end());
    return v;
  }
  const auto& s = cluster_.ssh;
  std::vector<std::string> v = {"ssh",
                                "-o",
                                "BatchMode=yes",
                                "-o",
                                "ConnectTimeout=" + std::to_string(s.connect_timeout_s),
                                "-o",
                                "ServerAliveInterval=15",
                                "-o",
                                "ServerAliveCountMax=4",
                                "-o",
                                "ControlMaster=auto",
                                "-o",
                                "ControlPath=" + control_dir_ + "/%C",
                                "-o",
                                "ControlPersist=" + std::to_string(s.control_persist_s),
                                "-o",
                                "StrictHostKeyChecking=accept-new",
                                "-o",
                                "LogLevel=ERROR"};
  for (const auto& o : s.extra_options) {
    v.push_back("-o");
    v.push_back(o);
  }
  if (!node.ssh_key.empty()) {
    v.push_back("-i");
    v.push_back(node.ssh_key);
    v.push_back("-o");
    v.push_back("IdentitiesOnly=yes");
  }
  v.push_back("-p");
  v.push_back(std::to_string(node.port));
  if (!node.user.empty()) {
    v.push_back("-l");
    v.push_back(node.user);
  }
  v.push_back(node.host);
  v.push_back("--");
  v.push_back(shell_join(argv));  // the remote shell splits exactly these words back out
  return v;
}

bool is_unreachable(const Node& node, const ProcResult& r) {
  return node.transport == "ssh" && (r.exit_code == 255 || !r.spawn_error.empty());
}

std::string unreachable_words(const Node& node, const ProcResult& r, const std::string& what) {
  if (!is_unreachable(node, r)) return "";
  std::string why = last_line(r.spawn_error.empty() ? r.err : "ssh could not start: " + r.spawn_error);
  if (why.empty()) why = "exit 255";
  if (why.rfind("ssh", 0) != 0) why = "ssh: " + why;  // whose reason it is
  return "unreachable: " + why.substr(0, 400) + " (the " + what + " could not run)";
}

std::vector<ProcResult> fan_out(const Transport& t, const std::vector<std::vector<std::string>>& per_node,
                                std::chrono::milliseconds timeout) {
  const auto& nodes = t.cluster().nodes;
  std::vector<ProcRequest> reqs;
  reqs.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size() && i < per_node.size(); ++i) {
    ProcRequest r;
    r.argv = t.wrap(nodes[i], per_node[i]);
    r.timeout = timeout;
    r.label = nodes[i].name;
    reqs.push_back(std::move(r));
  }
  return run_all(reqs);
}

}  // namespace cvs
