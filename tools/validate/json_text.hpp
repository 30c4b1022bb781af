// JSON text for dhp_validate's records: a quoted string and a number (JSON
// has no inf/nan, so they are written as strings, which tools/validate/
// gates.py reads back).
#pragma once
#include <cmath>
#include <sstream>
#include <string>

namespace dhp::gates {

inline std::string jstr(const std::string& s) {
  std::string r = "\"";
  for (char c : s) r += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return r + "\"";
}
inline std::string jnum(double x) {  // JSON has no inf/nan: write them as strings
  if (std::isnan(x)) return "\"nan\"";
  if (std::isinf(x)) return x > 0 ? "\"inf\"" : "\"-inf\"";
  std::ostringstream os;
  os.precision(10);
  os << x;
  return os.str();
}

}  // namespace dhp::gates
