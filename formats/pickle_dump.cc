#include "formats/pickle_dump.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ckptspec {
namespace {

using Kind = PyValue::Kind;

constexpr int kMaxDumpDepth = 64;
// The text is cut past this many bytes (a value the memo shares is printed in full each time it
// is met, so a small pickle can stand for an exponentially long text), and the text that orders a
// set's elements past kMaxOrderingText; the values met are counted up to kMaxVisits.
constexpr size_t kMaxText = size_t{1} << 20;
constexpr size_t kMaxOrderingText = 4096;
constexpr size_t kMaxVisits = size_t{1} << 20;

uint64_t IdentityKey(PyValue v) { return (v.payload() << 4) | static_cast<uint64_t>(v.kind()); }

void AppendEscaped(std::string_view bytes, std::string* out) {
  static const char* kDigits = "0123456789abcdef";
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\'' && c != '\\') {
      *out += c;
    } else {
      *out += "\\x";
      *out += kDigits[u >> 4];
      *out += kDigits[u & 15];
    }
  }
}

class Dumper {
 public:
  // `labels`: whether values met more than once are labelled (#N); the text that orders a set's
  // elements has none, and is cut at kMaxOrderingText.
  Dumper(const PickleDocument& doc, bool labels) : doc_(doc), labels_(labels) {}

  std::string Dump(PyValue root) {
    if (labels_) Count(root, 0);
    std::string out;
    Print(root, 0, &out);
    return out;
  }

 private:
  bool HasIdentity(PyValue v) const {
    switch (v.kind()) {
      case Kind::kList:
      case Kind::kDict:
      case Kind::kSet:
      case Kind::kByteArray:
      case Kind::kPersistentId:
        return true;
      case Kind::kObject:
        return doc_.ClassOf(v)->role != GlobalRole::kEnum;
      default:
        return false;
    }
  }

  // The values `v` holds, in the order they are printed.
  std::vector<PyValue> Children(PyValue v) const {
    std::vector<PyValue> children;
    switch (v.kind()) {
      case Kind::kTuple:
      case Kind::kList:
      case Kind::kDict: {
        const PySpan items = doc_.Items(v);
        children.assign(items.begin(), items.end());
        break;
      }
      case Kind::kSet:
      case Kind::kFrozenSet:
        children = SortedElements(v);
        break;
      case Kind::kObject: {
        const PickleClass* c = doc_.ClassOf(v);
        for (size_t i = 0; i < c->field_count; ++i) children.push_back(doc_.FieldAt(v, i));
        const PySpan extras = doc_.Items(doc_.Extras(v));
        children.insert(children.end(), extras.begin(), extras.end());
        break;
      }
      case Kind::kPersistentId:
        children.push_back(doc_.PersistentIdTuple(v));
        break;
      default:
        break;
    }
    return children;
  }

  std::vector<PyValue> SortedElements(PyValue set) const {
    std::vector<std::pair<std::string, PyValue>> keyed;
    for (const PyValue& e : doc_.Items(set)) {
      keyed.emplace_back(Dumper(doc_, /*labels=*/false).Dump(e), e);
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<PyValue> sorted;
    for (const auto& [text, e] : keyed) sorted.push_back(e);
    return sorted;
  }

  void Count(PyValue v, int depth) {
    if (++visits_ > kMaxVisits || depth > kMaxDumpDepth) return;
    if (HasIdentity(v) && ++seen_[IdentityKey(v)] > 1) return;
    for (const PyValue& child : Children(v)) Count(child, depth + 1);
  }

  void Print(PyValue v, int depth, std::string* out) {
    if (out->size() > (labels_ ? kMaxText : kMaxOrderingText)) return;
    if (depth > kMaxDumpDepth) {
      *out += "...";
      return;
    }
    if (labels_ && HasIdentity(v) && seen_[IdentityKey(v)] > 1) {
      const auto [it, first] = label_of_.emplace(IdentityKey(v), label_of_.size() + 1);
      *out += "#" + std::to_string(it->second);
      if (!first) return;
      *out += "=";
    }
    const std::vector<PyValue> children = Children(v);
    const auto list = [&](const char* open, const char* close) {
      *out += open;
      for (size_t i = 0; i < children.size(); ++i) {
        if (i > 0) *out += ", ";
        Print(children[i], depth + 1, out);
      }
      *out += close;
    };
    switch (v.kind()) {
      case Kind::kNone:
        *out += "None";
        return;
      case Kind::kBool:
        *out += doc_.Bool(v) ? "True" : "False";
        return;
      case Kind::kInt:
        *out += std::to_string(doc_.Int(v));
        return;
      case Kind::kFloat: {
        const double d = doc_.Float(v);
        uint64_t bits = 0;
        std::memcpy(&bits, &d, sizeof(bits));
        char text[24];
        std::snprintf(text, sizeof(text), "float:%016llx", static_cast<unsigned long long>(bits));
        *out += text;
        return;
      }
      case Kind::kStr:
        *out += "'";
        AppendEscaped(doc_.Str(v), out);
        *out += "'";
        return;
      case Kind::kBytes:
      case Kind::kByteArray:
        *out += v.is(Kind::kBytes) ? "b'" : "bytearray(b'";
        AppendEscaped(doc_.Str(v), out);
        *out += v.is(Kind::kBytes) ? "'" : "')";
        return;
      case Kind::kTuple:
        list("(", children.size() == 1 ? ",)" : ")");
        return;
      case Kind::kList:
        list("[", "]");
        return;
      case Kind::kSet:
        list(children.empty() ? "set(" : "{", children.empty() ? ")" : "}");
        return;
      case Kind::kFrozenSet:
        list(children.empty() ? "frozenset(" : "frozenset({", children.empty() ? ")" : "})");
        return;
      case Kind::kDict:
        *out += "{";
        for (size_t i = 0; i + 1 < children.size(); i += 2) {
          if (i > 0) *out += ", ";
          Print(children[i], depth + 1, out);
          *out += ": ";
          Print(children[i + 1], depth + 1, out);
        }
        *out += "}";
        return;
      case Kind::kObject: {
        const PickleClass* c = doc_.ClassOf(v);
        *out += doc_.GlobalName(v) + "(";
        for (size_t i = 0; i < children.size(); ++i) {
          if (i > 0) *out += ", ";
          if (i < c->field_count) {
            *out += std::string(c->fields[i]) + "=";
          } else if ((i - c->field_count) % 2 == 0) {
            Print(children[i], depth + 1, out);  // an extra attribute's name
            *out += "=";
            Print(children[++i], depth + 1, out);
            continue;
          }
          Print(children[i], depth + 1, out);
        }
        *out += ")";
        return;
      }
      case Kind::kGlobal:
        *out += "global:" + doc_.GlobalName(v);
        return;
      case Kind::kPersistentId:
        list("persid(", ")");
        return;
    }
  }

  const PickleDocument& doc_;
  const bool labels_;
  std::unordered_map<uint64_t, int> seen_;         // by identity: times met (Count)
  std::unordered_map<uint64_t, size_t> label_of_;  // by identity: its N, once printed
  size_t visits_ = 0;
};

}  // namespace

std::string DumpPickleValue(const PickleDocument& doc, PyValue value) {
  return Dumper(doc, /*labels=*/true).Dump(value);
}

}  // namespace ckptspec
