#!/usr/bin/env bash
# Safety net for a Jest parent killed outright (SIGKILL, OOM): when <parent-pid> is gone, kill
# every process group still listed in <run-dir>/pgids, run the cleanup scripts listed in
# <run-dir>/cleanups (the test cluster's containers, mounts and network namespace) and delete the
# run's temp dir. On a normal teardown the run dir disappears first and this exits quietly.
#
#   reaper.sh <parent-pid> <run-dir>
parent=$1
run_dir=$2
while kill -0 "$parent" 2>/dev/null && [ -d "$run_dir" ]; do sleep 1; done
[ -d "$run_dir" ] || exit 0
if [ -f "$run_dir/pgids" ]; then
  while read -r pgid; do [ -n "$pgid" ] && kill -TERM -- "-$pgid" 2>/dev/null; done <"$run_dir/pgids"
  sleep 2
  while read -r pgid; do [ -n "$pgid" ] && kill -KILL -- "-$pgid" 2>/dev/null; done <"$run_dir/pgids"
fi
if [ -f "$run_dir/cleanups" ]; then
  while read -r -a cleanup; do [ ${#cleanup[@]} -gt 0 ] && bash "${cleanup[@]}"; done <"$run_dir/cleanups"
fi
rm -rf "$run_dir"
