// A container's rails as its hooks and the runtime shim handle them: where their journals live,
// the move with its check of each rail's RoCE GID, and the give-back of a container's directory.
// The idea not to miss: every move of a container's rails, whether a createRuntime hook makes it
// or the runtime shim while the runtime creates the container (early_rails.h), goes through
// move_container_rails, so both leave the same journal for poststop, the sweep and restore by
// hand, and both give everything back before they report a failure.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "netns/move.h"

namespace gdrproxy::proxy {

// The file in a container's rail directory that names who holds the rails, "<pid> <start
// time>\n" (base/owner_file.h): the container's process, or the mover while it works.
inline constexpr const char* kRailOwnerFile = "owner";
// The file in it that the runtime shim's mover (early_rails.h) holds locked while it works.
inline constexpr const char* kEarlyMoveFile = "early-move";

// The directory of the container `id`'s journals under `state_dir`.
std::string container_rails_dir(const std::string& state_dir, const std::string& id);

// Makes (or finds) that directory, and `state_dir` above it, mode 0700; throws gdrproxy::Error
// naming `who` unless it is a real directory (no link) owned by this user. Returns its path.
std::string make_container_rails_dir(const std::string& state_dir, const std::string& id,
                                     const std::string& who);

// Undoes a bind mount that pins a network namespace beside a journal, and removes its file.
void unpin_netns(const std::string& pin);

// What one move of a container's rails is.
struct ContainerRailMove {
  std::string who;  // "container <id>", printable, for messages
  netns::MoveOptions move;
  bool allow_plain_rails = false;  // rails that back no RDMA device (test rigs)
};

// Moves the rails and waits (up to 3 s) for a RoCE v2 IPv4 GID on each that backs an RDMA
// device. On any failure the rails are as before (move_rails rolls back; a missing GID is given
// back here, the journal removed) and Error names `who` and the cause. Notes go to `log`.
void move_container_rails(const ContainerRailMove& m, std::ostream& log);

// Gives back every journal in a container's directory and removes it with its namespace pins
// when all are done; one restorer at a time (flock on the directory), and not while a mover is
// at work on the rails (it waits for the mover's end). Returns the problems left (0: given back,
// or nothing was there).
int restore_rails_dir(const std::string& dir);

}  // namespace gdrproxy::proxy
