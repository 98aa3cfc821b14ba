// See output.h.
#include "harness/output.h"

#include <iostream>

#include "base/escape.h"

namespace gdrproxy::harness {
namespace {
std::ostream* current = &std::cerr;
}

std::ostream& log() {
  return *current;
}

void say(const std::string& line) {
  log() << kProg << ": " << gdrproxy::printable(line) << "\n";
  log().flush();
}

Capture::Capture() : previous_(current) {
  current = &buffer_;
}
Capture::~Capture() {
  current = previous_;
}

}  // namespace gdrproxy::harness
