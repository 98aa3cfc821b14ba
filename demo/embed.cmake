# Turns the example snapshot JSON into a C++ source defining example_snapshot_json().
file(READ ${IN} data HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," data "${data}")
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n#include \"demo/example_snapshot.h\"\n"
  "namespace gdrproxy::demo {\nstatic const unsigned char kData[] = {${data}};\n"
  "const std::string& example_snapshot_json() {\n"
  "  static const std::string s(reinterpret_cast<const char*>(kData), sizeof kData);\n"
  "  return s;\n}\n}  // namespace gdrproxy::demo\n")
