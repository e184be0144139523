# shellcheck shell=sh
# first_existing PATH...: prints the first PATH that is a file (exit 1 when none is).
for p in "$@"; do
  if [ -f "$p" ]; then
    echo "$p"
    exit 0
  fi
done
exit 1
