// The error a config parser throws for a bad field: "ORIGIN: FIELD: WHAT", e.g. "agent.json:
// containers[0].grants: expected an array of device names". The idea not to miss: the field's
// name and the text quoted in WHAT come from the file, which a tenant or an operator wrote, so
// the whole message is escaped (printable()) and stays one line of printable ASCII.
#pragma once

#include <string_view>

#include "base/error.h"

namespace gdrproxy {

// An empty origin or field is left out with its ": " ("runtime.json: not a JSON object").
Error json_field_error(std::string_view origin, std::string_view field, std::string_view what);

}  // namespace gdrproxy
