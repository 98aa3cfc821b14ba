// The reference workload image's versions (configs/containers/workload/versions.json), built into
// the doctor: the one place they are written, embedded at build time so that the binary and the
// image's Dockerfile cannot drift apart silently (the configs test checks the file against the
// Dockerfile and its README).
#pragma once

namespace gdrproxy::doctor {

extern const char* const kReferenceVersionsJson;

}  // namespace gdrproxy::doctor
