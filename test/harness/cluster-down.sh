#!/usr/bin/env bash
# Removes everything a test cluster left on the machine, whatever state it is in: used by the
# harness's normal teardown, its exit handler and the reaper (a killed Jest). Idempotent.
#
#   cluster-down.sh <cluster-dir>     (the directory holding cluster.env)
#
# Order matters: container processes first (through the runtime while it answers, then by
# cgroup), the shims, then the mounts under the cluster's directories, the network namespace
# (which takes the node's veth, bridge, routes and every iptables rule with it), the cgroups.
set -uo pipefail
dir=${1:?usage: cluster-down.sh <cluster-dir>}
[ -f "$dir/cluster.env" ] || exit 0
# shellcheck source=/dev/null
. "$dir/cluster.env" # NETNS CGROUP CONTAINERD_SOCK CTR

# 1. Containers, through containerd while it still runs (SIGKILL: a container's PID 1 ignores
#    SIGTERM without a handler).
if [ -S "$CONTAINERD_SOCK" ]; then
  ctr() { timeout 10 "$CTR" --address "$CONTAINERD_SOCK" --namespace k8s.io "$@" 2>/dev/null; }
  for t in $(ctr tasks list -q); do ctr tasks kill --signal SIGKILL "$t"; done
fi
# 2. Whatever still runs in the cluster's cgroups (a dead containerd cannot be asked).
for pass in 1 2 3; do
  procs=$(find /sys/fs/cgroup/*/"$CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
  [ -n "$procs" ] || break
  kill -KILL $procs 2>/dev/null
  sleep 0.3
done
# 2b. The containers' own cgroups. The kubelet runs without per-QoS cgroups, so containerd puts
#     each container in /k8s.io/<container id> of every hierarchy, outside the cluster's cgroup.
#     Its state directory names this cluster's tasks even when containerd is already gone (the
#     harness stops the processes before it runs this script).
tasks="$dir/containerd/state/io.containerd.runtime.v2.task/k8s.io"
ids=$(ls "$tasks" 2>/dev/null)
for pass in 1 2 3; do
  procs=""
  for id in $ids; do
    procs="$procs $(cat /sys/fs/cgroup/*/k8s.io/"$id"/cgroup.procs 2>/dev/null | sort -u)"
  done
  [ -n "${procs// /}" ] || break
  kill -KILL $procs 2>/dev/null
  sleep 0.3
done
# 3. The component processes and the shims: all name the cluster's directory in their arguments.
for pid in $(pgrep -f -- "$dir/" 2>/dev/null); do
  [ "$pid" = "$$" ] || [ "$pid" = "$PPID" ] || kill -KILL "$pid" 2>/dev/null
done
for pid in $(pgrep -f -- "-address $CONTAINERD_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
sleep 0.3
# 4. Mounts under the cluster's directory (overlay roots, volumes, pod network namespaces),
#    deepest first.
awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
done
# 5. The node's network namespace: its veth (and the host end), bridge, routes and iptables go too.
ip netns delete "$NETNS" 2>/dev/null
# 6. The cgroups, deepest first: the cluster's, and its containers'.
for h in /sys/fs/cgroup/*/"$CGROUP"; do
  [ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null
done
for id in $ids; do
  for h in /sys/fs/cgroup/*/k8s.io/"$id"; do
    [ -d "$h" ] && rmdir "$h" 2>/dev/null
  done
done
rm -rf "$dir"
exit 0
