#!/usr/bin/env bash
# sync_source.sh ROOT DEST: the committed tree of ROOT into DEST, keeping the times of unchanged files.
#
# Sourced by build_wheel.sh and build_cuda_wheel.sh: a second build then recompiles only what
# changed (their CMake trees live in DEST/build, which is left alone).
sync_source() {
  local root=$1 dest=$2
  rm -rf "$dest.new" && mkdir -p "$dest" "$dest.new"
  git -C "$root" archive --format=tar HEAD | tar -x -C "$dest.new"
  (cd "$dest.new" && find . -type f) | while IFS= read -r f; do
    if ! cmp -s "$dest.new/$f" "$dest/$f"; then
      mkdir -p "$(dirname "$dest/$f")" && cp "$dest.new/$f" "$dest/$f"
    fi
  done
  (cd "$dest" && find . -path ./build -prune -o -type f -print) | while IFS= read -r f; do
    [ -e "$dest.new/$f" ] || rm -f "$dest/$f"
  done
  rm -rf "$dest.new"
}
