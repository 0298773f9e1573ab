// RapidCheck generators of JSON values, for the tests of code that writes JSON text directly as a
// tree's dump would, or keeps a tree as the reader would give it back: every type the reader
// tells apart (signed and unsigned integers, doubles with -0.0 and the non-finite ones, strings
// that need escapes, UTF-8), nested. Header-only, so that any test can use it without linking the
// generators library.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

namespace ckptspec::gen {

// Printable ASCII, or one of a few strings with escapes and UTF-8; with `invalid_utf8`, also
// bytes that are not UTF-8 (what a dump must replace, or refuse).
inline rc::Gen<std::string> JsonText(bool invalid_utf8) {
  std::vector<std::string> special = {"", "decoder.layers.0.mlp.weight", "quote \" backslash \\",
                                      "tab\tnewline\n\x01", "caf\xc3\xa9"};
  if (invalid_utf8) special.push_back("invalid \xff\xfe UTF-8");
  return rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::inRange<char>(' ', '~' + 1)),
                        rc::gen::elementOf(special));
}

// A JSON value nested at most `depth` levels, its strings and member names from JsonText.
inline rc::Gen<nlohmann::json> JsonValue(int depth, bool invalid_utf8) {
  return rc::gen::exec([depth, invalid_utf8]() -> nlohmann::json {
    switch (*rc::gen::inRange(0, depth > 0 ? 9 : 7)) {
      case 0:
        return nullptr;
      case 1:
        return *rc::gen::arbitrary<bool>();
      case 2:
        return *rc::gen::arbitrary<int64_t>();
      case 3:
        return *rc::gen::arbitrary<uint64_t>();
      case 4:
        return *rc::gen::elementOf(std::vector<double>{
            0.5, -0.0, 3.0, 1e300, -2.5e-310, std::numeric_limits<double>::quiet_NaN(),
            std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()});
      case 5:
        return *rc::gen::arbitrary<double>();
      case 6:
        return *JsonText(invalid_utf8);
      case 7: {
        nlohmann::json array = nlohmann::json::array();
        for (int n = *rc::gen::inRange(0, 4); n > 0; --n) {
          array.push_back(*JsonValue(depth - 1, invalid_utf8));
        }
        return array;
      }
      default: {
        nlohmann::json object = nlohmann::json::object();
        for (int n = *rc::gen::inRange(0, 4); n > 0; --n) {
          object[*JsonText(invalid_utf8)] = *JsonValue(depth - 1, invalid_utf8);
        }
        return object;
      }
    }
  });
}

}  // namespace ckptspec::gen
