#include "runner/reproduce_string.h"

#include <cctype>
#include <charconv>
#include <exception>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include <rapidcheck.h>

namespace ckptspec {
namespace {

Status Bad(const std::string& what) { return Status::InvalidArgument("reproduce string: " + what); }

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// RapidCheck's map syntax: key[=value] pairs separated by white space; a key or a value is either
// quoted (' or ", a backslash escapes the next character) or runs to the next space (a key also
// to the next '=').
class PairParser {
 public:
  explicit PairParser(const std::string& text) : text_(text) {}

  // The next pair; false at the end of the text or on an error (then status() says which).
  bool Next(std::string* key, std::string* value) {
    SkipSpace();
    if (pos_ >= text_.size()) return false;
    const size_t key_at = pos_;
    if (!Token(/*stop_at_equals=*/true, key)) return false;
    if (key->empty()) {
      status_ = Bad("expected a key at offset " + std::to_string(key_at) + ", found '" +
                    text_.substr(key_at, 1) + "'");
      return false;
    }
    SkipSpace();
    value->clear();
    if (pos_ < text_.size() && text_[pos_] == '=') {
      ++pos_;
      SkipSpace();
      if (!Token(/*stop_at_equals=*/false, value)) return false;
    }
    return true;
  }
  const Status& status() const { return status_; }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool Token(bool stop_at_equals, std::string* out) {
    out->clear();
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      const char quote = text_[pos_];
      const size_t opened = pos_++;
      for (; pos_ < text_.size(); ++pos_) {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
          *out += text_[++pos_];
        } else if (text_[pos_] == quote) {
          ++pos_;
          return true;
        } else {
          *out += text_[pos_];
        }
      }
      status_ = Bad("the quote opened at offset " + std::to_string(opened) + " is not closed");
      return false;
    }
    while (pos_ < text_.size() && !IsSpace(text_[pos_]) &&
           !(stop_at_equals && text_[pos_] == '=')) {
      *out += text_[pos_++];
    }
    return true;
  }

  const std::string& text_;
  size_t pos_ = 0;
  Status status_;
};

// A decimal value of `key` within [min, max].
template <typename T>
Status ParseDecimal(const std::string& key, const std::string& value, T min, T max, T* out) {
  T parsed{};
  const char* end = value.data() + value.size();
  const auto [ptr, error] = std::from_chars(value.data(), end, parsed);
  const std::string accepted =
      " (accepted: " + std::to_string(min) + " to " + std::to_string(max) + ")";
  if (error == std::errc::result_out_of_range && ptr == end) {
    return Bad(key + " = '" + value + "' is out of range" + accepted);
  }
  if (value.empty() || error != std::errc() || ptr != end) {
    return Bad(key + " = '" + value + "' is not a whole number" + accepted);
  }
  if (parsed < min || parsed > max)
    return Bad(key + " = '" + value + "' is out of range" + accepted);
  *out = parsed;
  return Status::OK();
}

Status ParseBit(const std::string& key, const std::string& value, bool* out) {
  int bit = 0;
  CKPTSPEC_RETURN_IF_ERROR(ParseDecimal(key, value, 0, 1, &bit));
  *out = bit == 1;
  return Status::OK();
}

// RapidCheck's base64: six bits per character, least significant first, no padding; a last group
// of 2 or 3 characters holds 1 or 2 bytes, and its unused bits are zero.
Status DecodeBase64(const std::string& text, std::vector<uint8_t>* out) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+_";
  if (text.size() % 4 == 1) {
    return Bad("the reproduce value has " + std::to_string(text.size()) +
               " characters, a length base64 never has");
  }
  out->clear();
  uint32_t bits = 0;
  int nbits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t digit = kAlphabet.find(text[i]);
    if (digit == std::string::npos) {
      return Bad("the reproduce value has '" + text.substr(i, 1) + "' at character " +
                 std::to_string(i) + ", not a base64 digit (A-Z a-z 0-9 + _)");
    }
    bits |= static_cast<uint32_t>(digit) << nbits;
    nbits += 6;
    if (nbits >= 8) {
      out->push_back(static_cast<uint8_t>(bits & 0xff));
      bits >>= 8;
      nbits -= 8;
    }
    if (i % 4 == 3 || i + 1 == text.size()) {
      if (bits != 0)
        return Bad("the reproduce value's base64 ends a group with stray bits at character " +
                   std::to_string(i));
      bits = 0;
      nbits = 0;
    }
  }
  return Status::OK();
}

// Reads the serialized entry, naming each field and its byte offset in errors.
class ByteReader {
 public:
  explicit ByteReader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

  Status Varint(const char* field, uint64_t* out) {
    const size_t at = pos_;
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ == bytes_.size()) return Truncated(field, at);
      const uint8_t byte = bytes_[pos_++];
      const uint64_t group = byte & 0x7f;
      if (shift == 63 && group > 1) break;  // beyond 64 bits
      value |= group << shift;
      if ((byte & 0x80) == 0) {
        *out = value;
        return Status::OK();
      }
    }
    return Bad(std::string(field) + " at byte " + std::to_string(at) +
               " is a number of more than 64 bits");
  }

  Status Fixed(const char* field, int width, uint64_t* out) {
    if (left() < static_cast<size_t>(width)) return Truncated(field, pos_);
    uint64_t value = 0;
    for (int i = 0; i < width; ++i) value |= static_cast<uint64_t>(bytes_[pos_++]) << (8 * i);
    *out = value;
    return Status::OK();
  }

  Status Text(const char* field, uint64_t length, std::string* out) {
    if (length > left()) return Truncated(field, pos_);
    out->assign(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_),
                bytes_.begin() + static_cast<std::ptrdiff_t>(pos_ + length));
    pos_ += static_cast<size_t>(length);
    return Status::OK();
  }

 private:
  Status Truncated(const char* field, size_t at) const {
    return Bad(std::string(field) + " at byte " + std::to_string(at) +
               " is cut short: the reproduce value ends after " + std::to_string(bytes_.size()) +
               " bytes");
  }
  const std::vector<uint8_t>& bytes_;
  size_t pos_ = 0;
};

Status CheckName(const char* what, const std::string& name, bool slash_allowed) {
  if (name.empty() || name.size() > kMaxReproduceNameBytes) {
    return Bad(std::string("the ") + what + " name has " + std::to_string(name.size()) +
               " bytes; 1 to " + std::to_string(kMaxReproduceNameBytes) + " are accepted");
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || (!slash_allowed && c == '/')) {
      return Bad(std::string("the ") + what + " name holds byte " + std::to_string(u) +
                 ", not printable ASCII" + (slash_allowed ? "" : " other than '/'"));
    }
  }
  return Status::OK();
}

// The one entry: its id, then the case. Checks every field before RapidCheck reads any.
Status DecodeEntry(const std::vector<uint8_t>& bytes, int max_size, DecodedReproduce* out) {
  ByteReader in(bytes);
  uint64_t entries = 0, length = 0;
  CKPTSPEC_RETURN_IF_ERROR(in.Varint("the entry count", &entries));
  if (entries != 1) {
    return Bad("the reproduce value holds " + std::to_string(entries) +
               " entries; exactly one (target/property) is accepted");
  }
  std::string id;
  CKPTSPEC_RETURN_IF_ERROR(in.Varint("the test id's length", &length));
  CKPTSPEC_RETURN_IF_ERROR(in.Text("the test id", length, &id));
  const size_t slash = id.rfind('/');
  if (slash == std::string::npos)
    return Bad("the entry '" + id + "' is not of the form target/property");
  out->target = id.substr(0, slash);
  out->property = id.substr(slash + 1);
  CKPTSPEC_RETURN_IF_ERROR(CheckName("target", out->target, /*slash_allowed=*/true));
  CKPTSPEC_RETURN_IF_ERROR(CheckName("property", out->property, /*slash_allowed=*/false));

  const size_t case_at = in.pos();
  uint64_t key = 0, bits = 0, counter = 0, bit_index = 0, size = 0, steps = 0;
  for (int i = 0; i < 4; ++i) CKPTSPEC_RETURN_IF_ERROR(in.Fixed("the Random's key", 8, &key));
  CKPTSPEC_RETURN_IF_ERROR(in.Varint("the Random's bits", &bits));
  CKPTSPEC_RETURN_IF_ERROR(in.Varint("the Random's counter", &counter));
  CKPTSPEC_RETURN_IF_ERROR(in.Fixed("the Random's bit index", 1, &bit_index));
  if (counter != 0) {
    return Bad("the Random's counter is " + std::to_string(counter) +
               "; a recorded case's generator always starts at 0");
  }
  if (bit_index > 64)
    return Bad("the Random's bit index is " + std::to_string(bit_index) + "; at most 64");
  if (bit_index < 64 && (bits >> bit_index) != 0) {
    return Bad("the Random's bits " + std::to_string(bits) +
               " have a bit set at or above its bit index " + std::to_string(bit_index));
  }
  CKPTSPEC_RETURN_IF_ERROR(in.Fixed("the size", 4, &size));
  if (size > static_cast<uint64_t>(max_size)) {
    return Bad("the case's size is " + std::to_string(static_cast<int32_t>(size)) +
               "; 0 to max_size = " + std::to_string(max_size) + " are accepted");
  }
  CKPTSPEC_RETURN_IF_ERROR(in.Varint("the shrink path's length", &steps));
  if (steps > kMaxShrinkSteps) {
    return Bad("the shrink path has " + std::to_string(steps) + " steps; at most " +
               std::to_string(kMaxShrinkSteps) + " are accepted");
  }
  for (uint64_t i = 0; i < steps; ++i) {
    uint64_t index = 0;
    CKPTSPEC_RETURN_IF_ERROR(in.Varint("a shrink step", &index));
    if (index > kMaxShrinkIndex) {
      return Bad("shrink step " + std::to_string(i) + " is " + std::to_string(index) +
                 "; at most " + std::to_string(kMaxShrinkIndex) + " is accepted");
    }
  }
  if (in.left() != 0) {
    return Bad("the reproduce value has " + std::to_string(in.left()) + " bytes after its entry");
  }
  // Every field is in range: RapidCheck's deserializer reads the same bytes.
  try {
    const auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(case_at);
    if (rc::detail::deserialize(begin, bytes.end(), out->reproduce) != bytes.end()) {
      return Bad("RapidCheck read the case differently");
    }
  } catch (const std::exception& e) {
    return Bad(std::string("RapidCheck does not read the case: ") + e.what());
  }
  return Status::OK();
}

}  // namespace

Status DecodeReproduceString(const std::string& text, DecodedReproduce* out) {
  *out = DecodedReproduce();
  if (text.size() > kMaxReproduceStringBytes) {
    return Bad("it has " + std::to_string(text.size()) + " bytes; at most " +
               std::to_string(kMaxReproduceStringBytes) + " are accepted");
  }
  PairParser parser(text);
  std::set<std::string> seen;
  std::string key, value, encoded;
  bool have_reproduce = false;
  rc::detail::TestParams& p = out->params;
  constexpr int kIntMax = std::numeric_limits<int>::max();
  while (parser.Next(&key, &value)) {
    if (!seen.insert(key).second) return Bad("'" + key + "' is given twice");
    if (key == "seed") {
      CKPTSPEC_RETURN_IF_ERROR(
          ParseDecimal<uint64_t>(key, value, 0, std::numeric_limits<uint64_t>::max(), &p.seed));
    } else if (key == "max_success") {
      CKPTSPEC_RETURN_IF_ERROR(ParseDecimal(key, value, 0, kIntMax, &p.maxSuccess));
    } else if (key == "max_size") {
      CKPTSPEC_RETURN_IF_ERROR(ParseDecimal(key, value, 0, kMaxReproduceSize, &p.maxSize));
    } else if (key == "max_discard_ratio") {
      CKPTSPEC_RETURN_IF_ERROR(ParseDecimal(key, value, 0, kIntMax, &p.maxDiscardRatio));
    } else if (key == "noshrink") {
      CKPTSPEC_RETURN_IF_ERROR(ParseBit(key, value, &p.disableShrinking));
    } else if (key == "verbose_progress" || key == "verbose_shrinking") {
      bool ignored = false;
      CKPTSPEC_RETURN_IF_ERROR(ParseBit(key, value, &ignored));
    } else if (key == "reproduce") {
      have_reproduce = true;
      encoded = value;
    } else {
      return Bad("unknown key '" + key + "'");
    }
  }
  CKPTSPEC_RETURN_IF_ERROR(parser.status());
  if (!have_reproduce) return Bad("it has no reproduce=... entry");
  std::vector<uint8_t> bytes;
  CKPTSPEC_RETURN_IF_ERROR(DecodeBase64(encoded, &bytes));
  return DecodeEntry(bytes, p.maxSize, out);
}

}  // namespace ckptspec
