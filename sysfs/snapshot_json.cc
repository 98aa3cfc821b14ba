// JSON form of the snapshot model; see snapshot.h. Field names follow sysfs names so a reader of
// the JSON can find each value on a host with `cat`.
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/file_io.h"
#include "base/hex.h"
#include "sysfs/bdf.h"
#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs {

using nlohmann::json;

const PciFunction* Snapshot::find_pci(const std::string& bdf) const {
  for (const auto& f : pci)
    if (f.bdf == bdf) return &f;
  return nullptr;
}
const IbDevice* Snapshot::find_ib(const std::string& name) const {
  for (const auto& d : ib)
    if (d.name == name) return &d;
  return nullptr;
}
const NetDevice* Snapshot::find_net(const std::string& name) const {
  for (const auto& d : net)
    if (d.name == name) return &d;
  return nullptr;
}

std::string errno_name(int e) {
  const char* n = e > 0 ? ::strerrorname_np(e) : nullptr;
  return n ? n : "errno " + std::to_string(e);
}

namespace {

json sparse_to_json(const std::map<int, std::string>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[std::to_string(k)] = v;
  return o;
}

// Refused attributes are written by errno name, which reads as the kernel's answer and does not
// depend on the architecture's numbering; only present when some attribute was refused, so a
// snapshot of a host that refuses nothing is the same as before the field existed.
void put_refused(json& o, const char* key, const RefusedMap& m) {
  if (m.empty()) return;
  json r = json::object();
  for (const auto& [name, e] : m) r[name] = errno_name(e);
  o[key] = r;
}
void put_refused(json& o, const char* key, const std::map<int, int>& m) {
  if (m.empty()) return;
  json r = json::object();
  for (const auto& [i, e] : m) r[std::to_string(i)] = errno_name(e);
  o[key] = r;
}

// Accessors that turn nlohmann's type errors into messages naming the field.
const json& field(const json& j, const char* name, const std::string& where) {
  if (!j.is_object() || !j.contains(name))
    throw Error("snapshot: " + where + ": missing field '" + name + "'");
  return j.at(name);
}
std::string str(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_string()) throw Error("snapshot: " + where + "." + name + ": expected a string");
  return v.get<std::string>();
}
std::string opt_str(const json& j, const char* name, const std::string& where) {
  if (!j.contains(name)) return "";
  return str(j, name, where);
}
int integer(const json& j, const char* name, const std::string& where) {
  const json& v = field(j, name, where);
  if (!v.is_number_integer())
    throw Error("snapshot: " + where + "." + name + ": expected an integer");
  return v.get<int>();
}
AttrMap attrs(const json& j, const char* name, const std::string& where) {
  AttrMap m;
  if (!j.contains(name)) return m;
  const json& o = j.at(name);
  if (!o.is_object()) throw Error("snapshot: " + where + "." + name + ": expected an object");
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (!it.value().is_string())
      throw Error("snapshot: " + where + "." + name + "." + it.key() + ": expected a string");
    if (it.key().empty() || it.key().find('/') != std::string::npos || it.key()[0] == '.')
      throw Error("snapshot: " + where + "." + name + ": bad file name '" + it.key() + "'");
    m[it.key()] = it.value().get<std::string>();
  }
  return m;
}
// A sparse table's key: a decimal index, whole; -1 for anything else.
int index_key(const std::string& key) {
  try {
    size_t used = 0;
    const int idx = std::stoi(key, &used);
    return used == key.size() ? idx : -1;
  } catch (...) {
    return -1;
  }
}

std::map<int, std::string> sparse(const json& j, const char* name, const std::string& where) {
  std::map<int, std::string> m;
  if (!j.contains(name)) return m;
  const json& o = j.at(name);
  if (!o.is_object()) throw Error("snapshot: " + where + "." + name + ": expected an object");
  for (auto it = o.begin(); it != o.end(); ++it) {
    const int idx = index_key(it.key());
    if (idx < 0 || !it.value().is_string())
      throw Error("snapshot: " + where + "." + name + ": bad entry '" + it.key() + "'");
    m[idx] = it.value().get<std::string>();
  }
  return m;
}
// "EINVAL" (or "errno N") back to its number; 0 when it is neither.
int errno_number(const std::string& name) {
  if (name.rfind("errno ", 0) == 0) {
    try {
      size_t used = 0;
      const int e = std::stoi(name.substr(6), &used);
      return used == name.size() - 6 && e > 0 ? e : 0;
    } catch (...) {
      return 0;
    }
  }
  for (int e = 1; e < 4096; ++e)
    if (const char* n = ::strerrorname_np(e); n && name == n) return e;
  return 0;
}
int refused_errno(const json& v, const std::string& where) {
  const int e = v.is_string() ? errno_number(v.get<std::string>()) : 0;
  if (e == 0) throw Error("snapshot: " + where + ": not an errno name ('EINVAL')");
  return e;
}
// `values`: the attributes with a value; an attribute is either read or refused, never both.
RefusedMap refused(const json& j, const std::string& where, const AttrMap& values) {
  RefusedMap m;
  if (!j.contains("refused")) return m;
  const json& o = j.at("refused");
  if (!o.is_object()) throw Error("snapshot: " + where + ".refused: expected an object");
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string w = where + ".refused." + it.key();
    if (it.key().empty() || it.key().find('/') != std::string::npos || it.key()[0] == '.')
      throw Error("snapshot: " + where + ".refused: bad file name '" + it.key() + "'");
    if (values.count(it.key())) throw Error("snapshot: " + w + ": also has a value in attrs");
    m[it.key()] = refused_errno(it.value(), w);
  }
  return m;
}
std::map<int, int> sparse_refused(const json& j, const char* name, const std::string& where,
                                  const std::map<int, std::string>& values, int len) {
  std::map<int, int> m;
  if (!j.contains(name)) return m;
  const json& o = j.at(name);
  if (!o.is_object()) throw Error("snapshot: " + where + "." + name + ": expected an object");
  for (auto it = o.begin(); it != o.end(); ++it) {
    const int idx = index_key(it.key());
    const std::string w = where + "." + name + "." + it.key();
    if (idx < 0 || idx >= len) throw Error("snapshot: " + w + ": bad or out-of-range index");
    if (values.count(idx)) throw Error("snapshot: " + w + ": also has a value");
    m[idx] = refused_errno(it.value(), w);
  }
  return m;
}
const json& array(const json& j, const char* name, const std::string& where) {
  static const json empty = json::array();
  if (!j.contains(name)) return empty;
  const json& v = j.at(name);
  if (!v.is_array()) throw Error("snapshot: " + where + "." + name + ": expected an array");
  return v;
}
// Names taken from the snapshot become path components; refuse anything that could escape.
std::string component(const json& j, const char* name, const std::string& where) {
  std::string s = str(j, name, where);
  if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos)
    throw Error("snapshot: " + where + "." + name + ": bad name '" + s + "'");
  return s;
}
// A bus directory name ("0000:0c") becomes a path component too.
std::string bus_name(const json& b, const std::string& where) {
  if (!b.is_string()) throw Error("snapshot: " + where + ": bus name is not a string");
  std::string s = b.get<std::string>();
  if (!is_bdf(s + ":00.0")) throw Error("snapshot: " + where + ": bad bus name '" + s + "'");
  return s;
}
std::string rel_path(const json& j, const char* name, const std::string& where) {
  std::string s = str(j, name, where);
  if (s.empty() || s[0] == '/' || s.find("..") != std::string::npos)
    throw Error("snapshot: " + where + "." + name + ": bad relative path '" + s + "'");
  return s;
}

}  // namespace

json to_json(const Snapshot& s) {
  if (!s.port_tables)
    throw Error("snapshot of " + s.source +
                " was captured without its RDMA ports' GID and P_Key tables; it is not saved");
  json j;
  j["schema"] = kSnapshotSchema;
  j["version"] = s.version;
  j["source"] = s.source;
  json roots = json::array();
  for (const auto& r : s.roots) roots.push_back({{"dir", r.dir}, {"buses", r.buses}});
  j["roots"] = roots;
  json pci = json::array();
  for (const auto& f : s.pci) {
    json o{{"bdf", f.bdf}, {"path", f.path}, {"attrs", f.attrs}};
    put_refused(o, "refused", f.refused);
    if (!f.config.empty()) o["config"] = to_hex(f.config);
    if (!f.driver.empty()) o["driver"] = f.driver;
    if (!f.child_buses.empty()) o["child_buses"] = f.child_buses;
    if (!f.physfn.empty()) o["physfn"] = f.physfn;
    pci.push_back(std::move(o));
  }
  j["pci"] = pci;
  json ib = json::array();
  for (const auto& d : s.ib) {
    json o{{"name", d.name}, {"pci", d.pci}, {"attrs", d.attrs}};
    put_refused(o, "refused", d.refused);
    json ports = json::array();
    for (const auto& p : d.ports) {
      json po{{"num", p.num},
              {"attrs", p.attrs},
              {"gid_table_len", p.gid_table_len},
              {"gids", sparse_to_json(p.gids)},
              {"gid_types", sparse_to_json(p.gid_types)},
              {"gid_ndevs", sparse_to_json(p.gid_ndevs)},
              {"pkey_table_len", p.pkey_table_len},
              {"pkeys", sparse_to_json(p.pkeys)},
              {"host_path", p.host_path}};
      put_refused(po, "refused", p.refused);
      put_refused(po, "gid_types_refused", p.gid_types_refused);
      put_refused(po, "gid_ndevs_refused", p.gid_ndevs_refused);
      ports.push_back(std::move(po));
    }
    o["ports"] = ports;
    if (d.verbs) {
      o["verbs"] = {{"name", d.verbs->name}, {"attrs", d.verbs->attrs}};
      put_refused(o["verbs"], "refused", d.verbs->refused);
    }
    ib.push_back(std::move(o));
  }
  j["infiniband"] = ib;
  if (s.uverbs_abi_version) j["infiniband_verbs_abi_version"] = *s.uverbs_abi_version;
  json net = json::array();
  for (const auto& n : s.net) {
    json o{{"name", n.name}, {"pci", n.pci}, {"subpath", n.subpath}, {"attrs", n.attrs}};
    put_refused(o, "refused", n.refused);
    net.push_back(std::move(o));
  }
  j["net"] = net;
  json numa = json::array();
  for (const auto& n : s.numa) {
    json o{{"id", n.id}, {"attrs", n.attrs}};
    put_refused(o, "refused", n.refused);
    numa.push_back(std::move(o));
  }
  j["numa"] = numa;
  j["peer_memory"] = s.peer_memory;
  j["omissions"] = s.omissions;
  return j;
}

Snapshot snapshot_from_json(const json& j) {
  if (!j.is_object()) throw Error("snapshot: top level is not a JSON object");
  std::string schema = str(j, "schema", "snapshot");
  if (schema != kSnapshotSchema)
    throw Error("snapshot: schema is '" + schema + "', expected '" + kSnapshotSchema + "'");
  int version = integer(j, "version", "snapshot");
  if (version > kSnapshotVersion)
    throw Error("snapshot: schema version " + std::to_string(version) +
                " is newer than this gdrproxy understands (" + std::to_string(kSnapshotVersion) +
                "); upgrade gdrproxy");
  if (version < 1) throw Error("snapshot: bad schema version " + std::to_string(version));
  Snapshot s;
  s.version = version;
  s.source = opt_str(j, "source", "snapshot");
  for (const auto& r : array(j, "roots", "snapshot")) {
    RootComplex rc;
    rc.dir = component(r, "dir", "roots[]");
    for (const auto& b : array(r, "buses", "roots[" + rc.dir + "]"))
      rc.buses.push_back(bus_name(b, "roots[" + rc.dir + "]"));
    s.roots.push_back(std::move(rc));
  }
  for (const auto& o : array(j, "pci", "snapshot")) {
    PciFunction f;
    f.bdf = component(o, "bdf", "pci[]");
    std::string w = "pci[" + f.bdf + "]";
    f.path = rel_path(o, "path", w);
    if (basename_of(f.path) != f.bdf)
      throw Error("snapshot: " + w + ".path '" + f.path + "' does not end in its BDF");
    f.attrs = attrs(o, "attrs", w);
    f.refused = refused(o, w, f.attrs);
    if (o.contains("config")) {
      auto bin = from_hex(str(o, "config", w));
      if (!bin) throw Error("snapshot: " + w + ".config: not a hex string");
      f.config = *bin;
    }
    if (o.contains("driver")) f.driver = component(o, "driver", w);
    for (const auto& b : array(o, "child_buses", w)) f.child_buses.push_back(bus_name(b, w));
    f.physfn = opt_str(o, "physfn", w);
    s.pci.push_back(std::move(f));
  }
  for (const auto& o : array(j, "infiniband", "snapshot")) {
    IbDevice d;
    d.name = component(o, "name", "infiniband[]");
    std::string w = "infiniband[" + d.name + "]";
    d.pci = component(o, "pci", w);
    d.attrs = attrs(o, "attrs", w);
    d.refused = refused(o, w, d.attrs);
    for (const auto& po : array(o, "ports", w)) {
      IbPort p;
      p.num = integer(po, "num", w + ".ports[]");
      std::string pw = w + ".ports[" + std::to_string(p.num) + "]";
      p.attrs = attrs(po, "attrs", pw);
      p.refused = refused(po, pw, p.attrs);
      p.gid_table_len = integer(po, "gid_table_len", pw);
      p.gids = sparse(po, "gids", pw);
      p.gid_types = sparse(po, "gid_types", pw);
      p.gid_ndevs = sparse(po, "gid_ndevs", pw);
      p.pkey_table_len = integer(po, "pkey_table_len", pw);
      p.pkeys = sparse(po, "pkeys", pw);
      p.host_path = opt_str(po, "host_path", pw);
      if (p.gid_table_len < 0 || p.gid_table_len > 4096 || p.pkey_table_len < 0 ||
          p.pkey_table_len > 65536)
        throw Error("snapshot: " + pw + ": table length out of range");
      auto check_sparse = [&](const std::map<int, std::string>& m, int len, const char* what) {
        if (!m.empty() && m.rbegin()->first >= len)
          throw Error("snapshot: " + pw + "." + what + ": index beyond table length");
      };
      check_sparse(p.gids, p.gid_table_len, "gids");
      check_sparse(p.gid_types, p.gid_table_len, "gid_types");
      check_sparse(p.gid_ndevs, p.gid_table_len, "gid_ndevs");
      check_sparse(p.pkeys, p.pkey_table_len, "pkeys");
      p.gid_types_refused =
          sparse_refused(po, "gid_types_refused", pw, p.gid_types, p.gid_table_len);
      p.gid_ndevs_refused =
          sparse_refused(po, "gid_ndevs_refused", pw, p.gid_ndevs, p.gid_table_len);
      d.ports.push_back(std::move(p));
    }
    if (o.contains("verbs")) {
      UverbsDevice u;
      u.name = component(o.at("verbs"), "name", w + ".verbs");
      u.attrs = attrs(o.at("verbs"), "attrs", w + ".verbs");
      u.refused = refused(o.at("verbs"), w + ".verbs", u.attrs);
      d.verbs = std::move(u);
    }
    s.ib.push_back(std::move(d));
  }
  if (j.contains("infiniband_verbs_abi_version"))
    s.uverbs_abi_version = str(j, "infiniband_verbs_abi_version", "snapshot");
  for (const auto& o : array(j, "net", "snapshot")) {
    NetDevice n;
    n.name = component(o, "name", "net[]");
    std::string w = "net[" + n.name + "]";
    n.pci = component(o, "pci", w);
    n.subpath = rel_path(o, "subpath", w);
    n.attrs = attrs(o, "attrs", w);
    n.refused = refused(o, w, n.attrs);
    s.net.push_back(std::move(n));
  }
  for (const auto& o : array(j, "numa", "snapshot")) {
    NumaNode n;
    n.id = integer(o, "id", "numa[]");
    n.attrs = attrs(o, "attrs", "numa[" + std::to_string(n.id) + "]");
    n.refused = refused(o, "numa[" + std::to_string(n.id) + "]", n.attrs);
    s.numa.push_back(std::move(n));
  }
  if (j.contains("peer_memory")) {
    const json& pm = j.at("peer_memory");
    if (!pm.is_object()) throw Error("snapshot: peer_memory: expected an object");
    for (auto it = pm.begin(); it != pm.end(); ++it) {
      const std::string& p = it.key();
      if (p.empty() || p[0] == '/' || p.find("..") != std::string::npos || !it.value().is_string())
        throw Error("snapshot: peer_memory: bad entry '" + p + "'");
      s.peer_memory[p] = it.value().get<std::string>();
    }
  }
  for (const auto& o : array(j, "omissions", "snapshot"))
    s.omissions.push_back(o.get<std::string>());
  // Cross references: everything must point at a recorded PCI function.
  for (const auto& d : s.ib)
    if (!s.find_pci(d.pci))
      throw Error("snapshot: infiniband[" + d.name + "].pci " + d.pci + " is not in pci[]");
  for (const auto& n : s.net)
    if (!s.find_pci(n.pci))
      throw Error("snapshot: net[" + n.name + "].pci " + n.pci + " is not in pci[]");
  return s;
}

Snapshot load_snapshot(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open snapshot " + path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error("snapshot " + path + " is not valid JSON: " + e.what());
  }
  try {
    return snapshot_from_json(j);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  } catch (const json::exception& e) {
    throw Error(path + ": malformed snapshot: " + e.what());
  }
}

void save_snapshot(const Snapshot& s, const std::string& path) {
  std::string text = to_json(s).dump(1) + "\n";
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) throw Error("cannot write " + tmp);
    out << text;
    if (!out.flush()) throw Error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error("cannot rename " + tmp + " to " + path);
}

}  // namespace gdrproxy::sysfs
