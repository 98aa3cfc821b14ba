#include "proxy/engine/session_stats.h"

#include <cstdio>
#include <string>

#include "base/escape.h"

namespace gdrproxy::proxy {

void print_summary(const SessionStats& s, const SummaryFacts& f, bool with_stats) {
  const char* prefix = f.log_prefix.c_str();
  if (s.observer_lost)
    std::fprintf(stderr,
                 "%s%llu results of allowed calls were lost (the observer's ring buffer "
                 "was full); their trace records say \"result not observed\"\n",
                 prefix, static_cast<unsigned long long>(s.observer_lost));
  if (s.results_unobserved)
    std::fprintf(stderr,
                 "%s%llu traced calls have no result (their records say \"result not "
                 "observed\" and why); the kernel skipped the observer's programs %llu times\n",
                 prefix, static_cast<unsigned long long>(s.results_unobserved),
                 static_cast<unsigned long long>(s.observer_skipped));
  if (f.trace_records_dropped)
    std::fprintf(stderr,
                 "%s%llu trace records dropped: %s did not take them in time (a stalled "
                 "reader?); the calls themselves were served\n",
                 prefix, static_cast<unsigned long long>(f.trace_records_dropped),
                 printable(f.trace_json).c_str());
  if (with_stats && f.observed)
    std::fprintf(stderr,
                 "%sobserver: %llu fd watch(es) removed after their process exited, %llu left "
                 "at exit\n",
                 prefix, static_cast<unsigned long long>(s.fds_unwatched_gone),
                 static_cast<unsigned long long>(s.fds_watched));
  if (s.handler_faults)
    std::fprintf(stderr, "%s%llu calls failed closed on internal errors (see above)\n", prefix,
                 static_cast<unsigned long long>(s.handler_faults));
  if (with_stats || (f.tracing && !f.quiet))
    std::fprintf(
        stderr,
        "%sserved %llu notifications: %llu ioctl, %llu open "
        "(%llu brokered), %llu denied (%llu repeated denial lines not printed); handler %.1f "
        "us/ioctl, %.1f us/open, p50 %.1f us, p99 %.1f us\n",
        prefix, static_cast<unsigned long long>(s.ioctls + s.opens),
        static_cast<unsigned long long>(s.ioctls), static_cast<unsigned long long>(s.opens),
        static_cast<unsigned long long>(s.brokered), static_cast<unsigned long long>(s.denied),
        static_cast<unsigned long long>(s.repeated_denials),
        s.ioctl_phase_samples ? double(s.ns_ioctl) / 1e3 / double(s.ioctl_phase_samples) : 0.0,
        s.opens ? double(s.ns_open) / 1e3 / double(s.opens) : 0.0, double(s.p50_ns) / 1e3,
        double(s.p99_ns) / 1e3);
  const bool phases = with_stats && s.ioctl_phase_samples;
  if (phases) {
    const auto us = [&](uint64_t ns) { return double(ns) / 1e3 / double(s.ioctl_phase_samples); };
    const SessionStats::IoctlPhases& p = s.ioctl_ns;
    std::fprintf(stderr,
                 "%sper ioctl: fd lookup %.1f us, memory reads %.1f us, decode %.1f us, policy "
                 "%.1f us, answer %.1f us, trace %.1f us\n",
                 prefix, us(p.lookup), us(p.memory), us(p.decode), us(p.policy), us(p.answer),
                 us(p.trace));
  }
  if (f.lsm) {
    const IoctlLsm::Counts& c = *f.lsm;
    if (with_stats || c.refused)
      std::fprintf(stderr,
                   "%sjudged in the kernel (BPF LSM): %llu untrapped call(s) allowed on granted "
                   "devices, %llu ioctl(s) refused (an ungranted device, or a request not allowed "
                   "on that device)%s\n",
                   prefix, static_cast<unsigned long long>(c.allowed),
                   static_cast<unsigned long long>(c.refused),
                   c.unreported ? (", " + std::to_string(c.unreported) +
                                   " of them not said (the refusals' ring was full)")
                                      .c_str()
                                : "");
  }
  if (with_stats && s.allowed_unread)
    std::fprintf(stderr,
                 "%s%llu trapped ioctl(s) allowed without reading their parameters (requests the "
                 "policy allows whatever they hold, on granted devices)\n",
                 prefix, static_cast<unsigned long long>(s.allowed_unread));
  if (with_stats && s.trap_copies_used)
    std::fprintf(stderr,
                 "%strap copies: %llu of %llu trapped ioctl(s) judged from the copy their caller "
                 "made at its trap; the rest were looked up by gdrproxy (no copy ready, the "
                 "copies still loading, or %llu rewritten while read)\n",
                 prefix, static_cast<unsigned long long>(s.trap_copies_used),
                 static_cast<unsigned long long>(s.ioctls),
                 static_cast<unsigned long long>(s.trap_copies_torn));
  if (with_stats && !f.kernel_allowed.requests.empty())
    std::fprintf(stderr,
                 "%sin the kernel, never trapped: %zu ioctl requests the policy allows whatever "
                 "their parameters (%u UVM calls, %u NVIDIA escapes); their calls are not counted "
                 "above (--kernel-allow off traps them)\n",
                 prefix, f.kernel_allowed.requests.size(), f.kernel_allowed.uvm,
                 f.kernel_allowed.frontend);
  if (!phases && s.denied && !f.quiet) {
    const std::string note =
        std::to_string(s.denied) + " device call(s) denied" +
        (s.repeated_denials ? " (" + std::to_string(s.repeated_denials) +
                                  " repeated denial lines not printed; --stats counts them)"
                            : "");
    std::fprintf(stderr, "%s%s\n", prefix, printable(note).c_str());
  }
}

}  // namespace gdrproxy::proxy
