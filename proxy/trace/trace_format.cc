// Text lines read like strace: who, device, call(args) = result {outputs} <latency>. The tenant's
// comm is escaped here; paths it spelled arrive already quoted (quote_text), and everything else
// passes through printable(), so a record is always one printable line. JSON is written with
// invalid UTF-8 replaced, so a record never throws.
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "proxy/policy/policy.h"
#include "proxy/trace/escape.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

std::string format_text(const TraceRecord& r) {
  std::string s;
  char head[128];
  std::snprintf(head, sizeof head, "[pid %u ns %u pidns %llu %s] ", r.who.host_tid, r.who.ns_tid,
                static_cast<unsigned long long>(r.who.pidns), escape_text(r.who.comm).c_str());
  s += head;
  s += r.device.empty() ? "?" : printable(r.device);
  s += ' ';
  s += r.syscall;
  s += ' ';
  s += printable(r.call.name);
  s += '(';
  for (size_t i = 0; i < r.call.args.size(); ++i) {
    if (i) s += ", ";
    s += printable(r.call.args[i].name) + "=" + printable(r.call.args[i].value);
  }
  s += ')';
  if (!r.call.malformed.empty()) s += " <malformed: " + printable(r.call.malformed) + ">";
  if (r.ret) {
    s += " = " + std::to_string(*r.ret);
    if (r.err) s += std::string(" ") + errno_name(r.err) + " (" + std::strerror(r.err) + ")";
  } else {
    s += " = ?";
  }
  if (!r.out.empty()) {
    s += " {";
    for (size_t i = 0; i < r.out.size(); ++i) {
      if (i) s += ", ";
      s += printable(r.out[i].name) + "=" + printable(r.out[i].value);
    }
    s += '}';
  }
  if (r.decision == "deny") s += " [denied: " + printable(r.reason) + "]";
  if (!r.note.empty()) s += " [" + printable(r.note) + "]";
  if (r.latency_us) {
    char lat[32];
    std::snprintf(lat, sizeof lat, " <%.1fus>", *r.latency_us);
    s += lat;
  }
  return s;
}

std::string format_json(const TraceRecord& r) {
  nlohmann::json j;
  j["seq"] = r.seq;
  j["time"] = r.wall_time;
  j["pid"] = r.who.host_tid;
  j["tgid"] = r.who.host_tgid;
  j["nspid"] = r.who.ns_tid;
  j["pidns"] = r.who.pidns;
  j["comm"] = r.who.comm;
  j["syscall"] = r.syscall;
  j["fd"] = r.fd;
  j["device"] = r.device;
  j["device_class"] = device_class_name(r.call.device_class);
  j["cmd"] = r.call.cmd;
  j["call"] = r.call.name;
  nlohmann::json args = nlohmann::json::object();
  for (const auto& a : r.call.args) args[a.name] = a.value;
  j["args"] = args;
  if (!r.call.malformed.empty()) j["malformed"] = r.call.malformed;
  j["decision"] = r.decision;
  if (!r.reason.empty()) j["rule"] = r.reason;
  j["result"] = r.ret ? nlohmann::json(*r.ret) : nlohmann::json();
  j["errno"] = r.err ? nlohmann::json(errno_name(r.err)) : nlohmann::json();
  nlohmann::json out = nlohmann::json::object();
  for (const auto& o : r.out) out[o.name] = o.value;
  j["out"] = out;
  j["latency_us"] = r.latency_us ? nlohmann::json(*r.latency_us) : nlohmann::json();
  if (!r.note.empty()) j["note"] = r.note;
  // Tenant bytes need not be UTF-8: replaced (U+FFFD), never a throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gdrproxy::proxy
