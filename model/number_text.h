// A double as text that reads back to the same double (17 significant digits), for messages
// that compare values ("max_lr 0.00029999999999999997 vs 0.0003").
#pragma once

#include <sstream>
#include <string>

namespace ckptspec {

inline std::string ExactDecimal(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

}  // namespace ckptspec
