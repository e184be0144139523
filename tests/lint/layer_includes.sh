#!/usr/bin/env bash
# The layers of lib/cvs/ (docs/architecture.md), in order: a unit may include its own folder and
# any folder before it, never one after it. Prints each include that breaks the order; exit 1 then.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../lib/cvs"
layers=(base catalog config logs statistics results verdicts fleet history probe exec certify)
rank() {
  local i
  for i in "${!layers[@]}"; do [[ ${layers[$i]} == "$1" ]] && { echo "$i"; return; }; done
  echo -1
}
bad=0
for dir in "${layers[@]}"; do
  [[ -d $dir ]] || { echo "lib/cvs/$dir: missing (update the layer list)"; bad=1; continue; }
  own=$(rank "$dir")
  while IFS=: read -r file _ include; do
    target=${include#*\"cvs/}
    target=${target%%\"*}
    [[ $target == */* ]] || continue  # a generated header of the build (cvs/agent_scripts.hpp)
    target=${target%%/*}
    r=$(rank "$target")
    if ((r < 0 || r > own)); then
      echo "lib/cvs/$file: includes cvs/$target/ (layer $target comes after $dir)"
      bad=1
    fi
  done < <(grep -n '#include "cvs/' "$dir"/*.hpp "$dir"/*.cpp 2>/dev/null || true)
done
for dir in */; do
  dir=${dir%/}
  (($(rank "$dir") >= 0)) || { echo "lib/cvs/$dir: a folder not in the layer list"; bad=1; }
done
((bad == 0)) && echo "layers: every include reads its own folder or one before it"
exit "$bad"
