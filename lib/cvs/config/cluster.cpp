#include "cvs/config/cluster.hpp"

#include <algorithm>
#include <fstream>

#include <set>
#include <stdexcept>

#include "cvs/base/text.hpp"
#include "cvs/config/config_error.hpp"
#include "cvs/config/json_reader.hpp"
#include "cvs/config/text_file.hpp"

namespace cvs {

bool is_loopback_address(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0 || host == "ip6-localhost";
}

Cluster default_cluster() {
  return local_cluster(1);
}

Cluster local_cluster(std::size_t count) {
  Cluster c;
  for (std::size_t i = 0; i < count; ++i) {
    Node n;
    n.name = count == 1 ? "localhost" : "local" + std::to_string(i);
    n.host = "localhost";
    n.transport = "local";
    c.nodes.push_back(n);
  }
  c.coordinator_address = "127.0.0.1";
  return c;
}

namespace {

// slurm.nodes, or an existing job's job_id with its nodelist (nodes, when given, their count).
void check_existing_job(const OrderedJson& slurm, const std::vector<std::string>& nodelist, IssueList& issues,
                        Cluster& c) {
  const bool has_job = slurm.contains("job_id"), has_list = slurm.contains("nodelist");
  if (has_job && !has_list)
    issues.add("/slurm/nodelist", "slurm.job_id needs the hosts of that job to run on",
               "list them: \"nodelist\": [\"gpu01\"] (scontrol show hostnames $SLURM_JOB_NODELIST)");
  else if (has_list && !has_job)
    issues.add(
        "/slurm/nodelist", "slurm.nodelist names hosts of an existing job (slurm.job_id)",
        "add \"job_id\", or pin the hosts of a new allocation: \"extra_args\": [\"--nodelist=gpu01,gpu02\"]");
  if (has_job && has_list) {
    if (slurm.contains("nodes") && c.slurm.nodes != static_cast<int>(nodelist.size()))
      issues.add("/slurm/nodes",
                 "slurm.nodes is " + std::to_string(c.slurm.nodes) + " but nodelist lists " +
                     std::to_string(nodelist.size()) + " host(s)",
                 "remove nodes (the nodelist says how many)");
    c.slurm.nodes = static_cast<int>(nodelist.size());
  } else if (!slurm.contains("nodes")) {
    issues.add("/slurm/nodes", "slurm.nodes is missing", "set how many nodes to allocate, e.g. \"nodes\": 2");
  }
  if (!c.slurm.existing_job || nodelist.size() != static_cast<std::size_t>(c.slurm.nodes))
    c.slurm.existing_job = false;
}

void read_overrides_and_scheduler(JsonReader& rd, Cluster& c) {
  if (const auto* o = rd.find("overrides")) {
    if (!o->is_object())
      rd.issues().add("/overrides", "overrides must be an object merged onto the suite config",
                      "write {\"gpus_per_node\": 4}");
    else
      c.overrides = *o;
  }
  rd.choice("scheduler", c.scheduler, {"slurm"},
            "set \"scheduler\": \"slurm\", or remove it for a listed set of nodes");
}

// slurm.job_id: the id of an existing job, digits.
void read_job_id(JsonReader& r, SlurmOptions& s) {
  const auto* v = r.find("job_id");
  if (!v) return;
  if (!v->is_string() || v->get<std::string>().empty() ||
      v->get<std::string>().find_first_not_of("0123456789") != std::string::npos)
    r.issues().add(r.at("job_id"), "job_id must be a Slurm job id as a string",
                   "e.g. \"123456\" (squeue --me)");
  else
    s.job_id = v->get<std::string>(), s.existing_job = true;
}

// A list of non-empty strings (nodelist: not empty either); an issue otherwise.
void read_names(JsonReader& r, const std::string& key, bool non_empty, std::vector<std::string>& out,
                const std::string& message, const std::string& fix) {
  const auto* v = r.find(key);
  if (!v) return;
  bool ok = v->is_array() && !(non_empty && v->empty());
  for (const auto& h : ok ? *v : OrderedJson::array())
    ok = ok && h.is_string() && !h.get<std::string>().empty();
  if (!ok) return r.issues().add(r.at(key), message, fix);
  for (const auto& h : *v) out.push_back(h.get<std::string>());
}

// The slurm block; nodelist: the hosts of an existing job (job_id).
void read_slurm_block(JsonReader& r, SlurmOptions& s, std::vector<std::string>& nodelist) {
  r.integer("nodes", s.nodes, 1);
  r.strs({{"partition", s.partition}, {"account", s.account}, {"time_limit", s.time_limit}});
  r.strs({{"container_image", s.container_image}, {"container_mounts", s.container_mounts}});
  read_job_id(r, s);
  read_names(r, "extra_args", false, s.extra_args, "extra_args must be a list of strings",
             "e.g. [\"--exclusive\"]");
  read_names(r, "nodelist", true, nodelist, "nodelist must be a non-empty list of host names",
             "e.g. [\"gpu01\", \"gpu02\"] (scontrol show hostnames $SLURM_JOB_NODELIST)");
}

// scheduler slurm: the slurm block, and the nodes: placeholders until the allocation names the
// hosts (rank order = SLURM_JOB_NODELIST order), or an existing job's hosts as they are listed.
void read_slurm(JsonReader& rd, Cluster& c) {
  std::vector<std::string> nodelist;
  const auto* so = rd.find("slurm");
  if (!so || !so->is_object()) {
    rd.issues().add("/slurm", "scheduler slurm needs a slurm block",
                    "add \"slurm\": {\"nodes\": 2, \"partition\": \"gpu\"}");
  } else {
    rd.nested(
        "slurm", [&](JsonReader& r) { read_slurm_block(r, c.slurm, nodelist); }, "the slurm block");
    check_existing_job(*so, nodelist, rd.issues(), c);
  }
  if (rd.find("nodes"))
    rd.issues().add("/nodes", "with scheduler slurm the nodes come from the allocation",
                    "remove nodes; set slurm.nodes");
  rd.allow({"head", "transport", "coordinator_address", "ssh"});  // the allocation decides these
  for (int i = 0; i < c.slurm.nodes; ++i) {
    Node n;
    n.name = c.slurm.existing_job ? nodelist[i] : "slurm-node-" + std::to_string(i);
    n.host = c.slurm.existing_job ? nodelist[i] : "(not allocated)";
    n.transport = "slurm";
    c.nodes.push_back(n);
  }
}

void check_node(const Node& node, const std::string& p, IssueList& issues) {
  if (node.host.empty())
    issues.add(pointer_join(p, "host"), "host is empty", "set the node's host name or address");
  if (node.transport != "ssh" && node.transport != "local")
    issues.add(pointer_join(p, "transport"), "transport must be ssh or local", "set \"transport\": \"ssh\"");
  if (node.transport == "local" && !is_loopback_address(node.host))
    issues.add(pointer_join(p, "transport"), "transport local on host '" + node.host + "' (not this machine)",
               "use transport ssh for remote hosts");
}

// One entry of "nodes": a host name, or an object of name, host, user, ssh_key, port, transport.
std::optional<Node> read_node(const OrderedJson& n, const std::string& p, const std::string& transport,
                              IssueList& issues) {
  Node node;
  node.transport = transport;
  if (n.is_string()) {
    node.host = n.get<std::string>();
  } else if (n.is_object()) {
    JsonReader r(issues, n, p, "a node");
    r.strs({{"name", node.name}, {"host", node.host}, {"user", node.user}});
    r.strs({{"ssh_key", node.ssh_key}, {"transport", node.transport}});
    r.integer("port", node.port, 1, false, 65535);
    r.finish();
  } else {
    issues.add(p, "a node must be a host name or an object",
               "write \"gpu-node-01\" or {\"host\": \"gpu-node-01\"}");
    return std::nullopt;
  }
  check_node(node, p, issues);
  if (node.name.empty()) node.name = node.host;
  return node;
}

void read_nodes(JsonReader& rd, Cluster& c) {
  std::string transport = "ssh";
  rd.choice("transport", transport, {"ssh", "local"}, "set \"transport\": \"ssh\"");
  const auto* nodes = rd.find("nodes");
  if (!nodes || !nodes->is_array() || nodes->empty())
    return rd.issues().add("/nodes", "nodes must be a non-empty list",
                           "list the nodes, e.g. [{\"host\": \"gpu-node-01\"}]");
  std::set<std::string> names;
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    const std::string p = pointer_join("/nodes", i);
    auto node = read_node((*nodes)[i], p, transport, rd.issues());
    if (!node) continue;
    if (!names.insert(node->name).second)
      rd.issues().add(pointer_join(p, "name"), "node name '" + node->name + "' is used twice",
                      "give each node a unique name (several nodes on one host need explicit names)");
    c.nodes.push_back(*node);
  }
}

// Head, rank 0 (JAX_PROCESS_INDEX 0 hosts JAX's coordinator), the coordinator address and the
// metrics source are one node: the head moves to the front, the others keep their order.
void read_head(JsonReader& rd, Cluster& c) {
  if (const auto* h = rd.find("head")) {
    bool found = false;
    if (h->is_string())
      for (std::size_t i = 0; i < c.nodes.size(); ++i)
        if (c.nodes[i].name == h->get<std::string>()) {
          c.head = i;
          found = true;
        }
    if (!found)
      rd.issues().add("/head", "head " + h->dump() + " is not the name of a node", "name one of the nodes");
  }
  if (c.head != 0 && c.head < c.nodes.size()) {
    std::rotate(c.nodes.begin(), c.nodes.begin() + static_cast<std::ptrdiff_t>(c.head),
                c.nodes.begin() + static_cast<std::ptrdiff_t>(c.head) + 1);
    c.head = 0;
  }
  std::string address;
  rd.str("coordinator_address", address);
  if (c.nodes.empty()) return;
  c.coordinator_address = address.empty() ? c.head_node().host : address;
  bool any_remote = false;
  for (const auto& n : c.nodes) any_remote |= !is_loopback_address(n.host);
  if (any_remote && is_loopback_address(c.coordinator_address))
    rd.issues().add(!address.empty() ? "/coordinator_address" : "/head",
                    "coordinator address '" + c.coordinator_address +
                        "' is a loopback address but nodes run on other hosts: they would never rendezvous",
                    "set coordinator_address to an address of the head node that every node can reach");
}

}  // namespace

void from_json(JsonReader& r, SshOptions& s) {
  r.integer("connect_timeout_s", s.connect_timeout_s, 1);
  r.integer("control_persist_s", s.control_persist_s, 1);
  r.str("control_dir", s.control_dir);
  r.str_list("options", s.extra_options);
}

Cluster parse_cluster(const std::string& text, const std::filesystem::path& file) {
  IssueList issues(file.string());
  OrderedJson root;
  try {
    root = OrderedJson::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(file.string(), "", std::string("invalid JSON: ") + e.what(), "fix the JSON syntax");
  }
  if (!root.is_object())
    throw ConfigError(file.string(), "", "a cluster file must be a JSON object", "wrap it in { }");
  Cluster c;
  c.file = file;
  JsonReader rd(issues, root, "", "the cluster file");
  read_overrides_and_scheduler(rd, c);
  if (c.is_slurm()) {
    read_slurm(rd, c);
  } else {
    read_nodes(rd, c);
    read_head(rd, c);
    if (const auto* s = rd.find("ssh"); s && !s->is_object())
      issues.add("/ssh", "ssh must be an object", "write {\"connect_timeout_s\": 10}");
    else
      rd.nested(
          "ssh", [&](JsonReader& r) { from_json(r, c.ssh); }, "the ssh block");
    rd.allow({"slurm"});  // read only with scheduler slurm
  }
  rd.finish();
  issues.throw_if_any();
  return c;
}

Cluster load_cluster(const std::filesystem::path& file) {
  const auto text = read_text_file(file);
  if (!text) throw ConfigError(file.string(), "", "cannot read the cluster file", "check the --cluster path");
  return parse_cluster(*text, file);
}

namespace {

// {user-id} is "the cluster/OS username": the nodes' user when the cluster file gives one (the
// same on every node), else this process's user. Nodes with different users leave it undefined.
LoadOptions with_cluster_user(const std::filesystem::path& config_file, const Cluster& cluster,
                              LoadOptions options) {
  if (!options.user.empty()) return options;
  std::string user;
  std::string all;
  bool differ = false;
  for (const auto& n : cluster.nodes) {
    if (n.user.empty()) continue;
    if (user.empty()) user = n.user;
    differ |= n.user != user;
    if (all.find("'" + n.user + "'") == std::string::npos) all += (all.empty() ? "'" : ", '") + n.user + "'";
  }
  if (!differ) {
    options.user = user;
    return options;
  }
  const auto text = read_text_file(config_file);
  if (text && text->find("{user-id}") != std::string::npos)
    throw ConfigError(cluster.file.string(), "/nodes",
                      "the nodes log in as different users (" + all + ") but " + config_file.string() +
                          " uses {user-id} in its paths, which must be one user",
                      "give every node the same user, or write those paths without {user-id}");
  return options;
}

}  // namespace

SuiteConfig load_config_for_cluster(const std::filesystem::path& config_file, const Cluster& cluster,
                                    const LoadOptions& given) {
  const LoadOptions options = with_cluster_user(config_file, cluster, given);
  if (cluster.overrides.empty()) return load_config(config_file, options);
  const auto text = read_text_file(config_file);
  if (!text) throw ConfigError(config_file.string(), "", "cannot read the config file", "check the path");
  OrderedJson j;
  try {
    j = OrderedJson::parse(*text);
  } catch (const nlohmann::json::parse_error&) {
    return load_config(config_file, options);  // reports the syntax error with line and column
  }
  j.merge_patch(cluster.overrides);
  return load_config_text(j.dump(), config_file, options);
}

OrderedJson node_to_json(const Node& node) {
  OrderedJson j = {{"name", node.name}, {"host", node.host}, {"transport", node.transport}};
  if (!node.user.empty()) j["user"] = node.user;
  if (!node.ssh_key.empty()) j["ssh_key"] = node.ssh_key;
  if (node.port != 22) j["port"] = node.port;
  return j;
}

namespace {

// A Slurm cluster's file for these hosts: in its job (job_id, nodelist) while it holds one, else a
// new allocation of exactly them (nodes, extra_args --nodelist).
OrderedJson slurm_file_with(const Cluster& cluster, const std::vector<Node>& nodes, OrderedJson raw) {
  auto& slurm = raw["slurm"];
  auto hosts = OrderedJson::array();
  std::string joined;
  for (const auto& n : nodes) {
    hosts.push_back(n.host);
    joined += (joined.empty() ? "" : ",") + n.host;
  }
  if (!cluster.slurm.job_id.empty()) {
    slurm.erase("nodes");
    slurm["job_id"] = cluster.slurm.job_id;
    slurm["nodelist"] = hosts;
    return raw;
  }
  slurm.erase("job_id");
  slurm.erase("nodelist");
  slurm["nodes"] = nodes.size();
  auto args = OrderedJson::array();
  for (const auto& a : slurm.value("extra_args", OrderedJson::array()))
    if (!a.is_string() ||
        (a.get<std::string>().rfind("--nodelist", 0) != 0 && a.get<std::string>().rfind("-w", 0) != 0))
      args.push_back(a);
  args.push_back("--nodelist=" + joined);
  slurm["extra_args"] = args;
  return raw;
}

}  // namespace

OrderedJson cluster_file_with(const Cluster& cluster, const std::vector<Node>& nodes) {
  OrderedJson raw = OrderedJson::object();
  if (!cluster.file.empty()) {
    std::ifstream in(cluster.file);
    raw = OrderedJson::parse(in);
  }
  if (cluster.is_slurm()) return slurm_file_with(cluster, nodes, std::move(raw));
  auto list = OrderedJson::array();
  for (const auto& n : nodes) list.push_back(node_to_json(n));
  raw["nodes"] = list;
  if (nodes.empty()) return raw;
  const auto& head = nodes.front();
  raw["head"] = head.name;
  const bool same_head = !cluster.nodes.empty() && cluster.head_node().name == head.name;
  if (!(same_head && nodes.size() > 1 && raw.contains("coordinator_address")))
    raw["coordinator_address"] = is_loopback_address(head.host) ? "127.0.0.1" : head.host;
  return raw;
}

void write_cluster_file_of(const std::filesystem::path& file, const Cluster& cluster,
                           const std::vector<std::string>& names) {
  std::error_code ec;
  std::filesystem::remove(file, ec);
  if (names.empty()) return;
  std::vector<Node> nodes;
  for (const auto& name : names)
    for (const auto& node : cluster.nodes)
      if (node.name == name) nodes.push_back(node);
  std::ofstream out(file);
  out << cluster_file_with(cluster, nodes).dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

std::map<std::string, std::string> hosts_by_name(const Cluster& cluster) {
  std::map<std::string, std::string> out;
  for (const auto& n : cluster.nodes) out[n.name] = n.host;
  return out;
}

void write_slurm_exclude(const std::filesystem::path& file, const std::map<std::string, std::string>& host_of,
                         const std::vector<std::string>& names) {
  std::string hosts;
  for (const auto& name : names) {
    const auto it = host_of.find(name);
    hosts += (hosts.empty() ? "" : ",") + (it == host_of.end() ? name : it->second);
  }
  write_file_whole(file, hosts.empty() ? "" : "--exclude=" + hosts + "\n");
}

}  // namespace cvs
