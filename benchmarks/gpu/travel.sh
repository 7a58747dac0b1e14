#!/usr/bin/env bash
# What a device call sends is the checkout's tracked files and carried paths, at most
# 64 MiB.  The committed run records under benchmarks/results (over 100 MB by 2026-12)
# and figures/ are more than that, and no GPU part reads them (the GPU registrations under
# benchmarks/results/gpu/ stay).  For the device calls only:
#   bash benchmarks/gpu/travel.sh slim      # untrack them in git's index (the files stay
#                                           # on disk) and ignore them in .git/info/exclude
#   bash benchmarks/gpu/travel.sh restore   # put the index and .git/info/exclude back
# Restore before committing anything: a commit made slim would delete them from main.
set -eu
cd "$(git rev-parse --show-toplevel)"
GIT=$(git rev-parse --git-dir)
LIST="$GIT/specmodel-travel.list"
EXCLUDE="$GIT/info/exclude"
BEGIN="# specmodel travel.sh slim: begin"
END="# specmodel travel.sh slim: end"
travelling() { git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1; }
case ${1:-} in
  slim)
    [ -e "$LIST" ] && { echo "already slim ($LIST): run restore first"; exit 2; }
    git diff --cached --quiet || { echo "staged changes: commit or unstage them first"; exit 2; }
    git ls-files benchmarks/results figures | grep -v '^benchmarks/results/gpu/' > "$LIST"
    git rm -q --cached --pathspec-from-file="$LIST"
    mkdir -p "$GIT/info"
    printf '%s\n/benchmarks/results/*\n!/benchmarks/results/gpu/\n/figures/\n%s\n' \
      "$BEGIN" "$END" >> "$EXCLUDE"
    echo "slim: $(wc -l < "$LIST") files out of the index; tracked files now $(travelling) bytes" ;;
  restore)
    [ -e "$LIST" ] || { echo "not slim (no $LIST)"; exit 2; }
    git reset -q --pathspec-from-file="$LIST"
    sed -i "/^$BEGIN\$/,/^$END\$/d" "$EXCLUDE"
    rm "$LIST"
    echo "restored: tracked files $(travelling) bytes"; git status --short | head ;;
  *) echo "usage: travel.sh slim|restore"; exit 2 ;;
esac
