// The one config-field error; see json_field_error.h.
#include "base/json_field_error.h"

#include <string>

#include "base/escape.h"

namespace gdrproxy {

Error json_field_error(std::string_view origin, std::string_view field, std::string_view what) {
  std::string message;
  for (const std::string_view part : {origin, field}) {
    if (part.empty()) continue;
    message.append(part);
    message += ": ";
  }
  message.append(what);
  return Error(printable(message));
}

}  // namespace gdrproxy
