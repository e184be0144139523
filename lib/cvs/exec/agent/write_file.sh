# shellcheck shell=sh
# write_file PATH CONTENT OVERWRITE(1|0): writes CONTENT to PATH, creating its directory; refuses
# (exit 17) to overwrite an existing PATH unless OVERWRITE is 1.
p=$1
if [ "$3" != 1 ] && [ -e "$p" ]; then
  echo "cvs: refusing to overwrite $p" >&2
  exit 17
fi
d=${p%/*}
mkdir -p "${d:-/}" && printf '%s' "$2" >"$p"
