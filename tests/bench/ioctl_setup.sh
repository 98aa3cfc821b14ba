# shellcheck shell=bash disable=SC2034 # dev, prefix and copies are the sourcing script's
# What the per-call benches share (sourced by ioctl_latency.sh, ioctl_profile.sh and
# trap_copy_cost.sh, which set gp to the gdrproxy binary first): the uverbs node the client
# calls, the prefix every run starts with (the stand-in where the host has no such node,
# gdrproxy-testkit standin, beside gp; taskset -c $CPUS where CPUS is set), and whether gdrproxy's
# rows can load the trap copies before the command starts (--trap-copy on; the default, auto,
# loads them beside the command, and the first calls of a run would be measured without them).
dev=/dev/infiniband/uverbs0
prefix=()
[[ -e $dev ]] || prefix=("$(dirname "$gp")/gdrproxy-testkit" standin)
if [[ -n ${CPUS:-} ]]; then prefix=(taskset -c "$CPUS" "${prefix[@]}"); fi
copies=()
# An if, not `&&`: as the file's last command a refusal would be its status, and the sourcing
# script (set -e) would stop there.
if "$gp" run -q --trap-copy on -- true 2>/dev/null; then copies=(--trap-copy on); fi
