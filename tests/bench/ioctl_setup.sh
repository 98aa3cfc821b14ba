# shellcheck shell=bash disable=SC2034 # dev, prefix and copies are the sourcing script's
# What the per-call benches share (sourced by ioctl_latency.sh and ioctl_profile.sh, which set
# gp to the gdrproxy binary first): the uverbs node the client calls, the stand-in prefix where
# the host has none (proxy/exercise/standin_devices.h), and whether gdrproxy's rows can load the
# trap copies before the command starts (--trap-copy on; the default, auto, loads them beside
# the command, and the first calls of a run would be measured without them).
dev=/dev/infiniband/uverbs0
prefix=()
[[ -e $dev ]] || prefix=("$gp" standin)
copies=()
# An if, not `&&`: as the file's last command a refusal would be its status, and the sourcing
# script (set -e) would stop there.
if "$gp" run -q --trap-copy on -- true 2>/dev/null; then copies=(--trap-copy on); fi
