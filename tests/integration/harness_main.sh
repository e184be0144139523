# The command line of the test harnesses (netns_cluster.sh, slurm_cluster.sh), sourced last by
# each after it defines up DIR, down DIR and run_under DIR CMD...:
#   up DIR | down DIR | run DIR [--] CMD...
# run brings the harness up, runs CMD under it (run_under: the environment CMD needs, the checks
# after it) and brings it down on every path. DIR is made absolute (and created).
# shellcheck shell=bash
harness_usage() {
  echo "usage: $0 up|down|run DIR [-- CMD...]" >&2
  exit 2
}
harness_dir=""
harness_main() {
  local cmd=${1:-}
  [[ -n "$cmd" && -n "${2:-}" ]] || harness_usage
  harness_dir=$(mkdir -p "$2" && cd "$2" && pwd)
  case "$cmd" in
    up) up "$harness_dir" ;;
    down) down "$harness_dir" ;;
    run)
      shift 2
      [[ "${1:-}" == "--" ]] && shift
      trap 'down "$harness_dir"' EXIT
      up "$harness_dir"
      run_under "$harness_dir" "$@"
      ;;
    *) harness_usage ;;
  esac
}
