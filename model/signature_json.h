// The JSON form of a GlobalSignature: the "plan dump" a third-party framework hands to ckptspec
// (docs/SIGNATURE.md is the reference for the form and its error messages).
//
//   {"format": "ckptspec.signature", "version": 1,
//    "ranks": [{"rank": 0,
//               "tensors": [{"key", "dtype", "global_shape", "global_offset", "local_shape",
//                            "axis_fragmentations"?, "prepend_axis_num"?, "replica_id",
//                            "origin"?, "digest"?}],
//               "objects": [{"key", "global_shape", "global_offset", "replica_id",
//                            "origin"?, "digest"?}],
//               "common"?: any JSON}]}
//
// Contract: reading never throws, never asserts and never allocates more than a small multiple of
// the input's size (no allocation depends on a shape's volume). Every malformed input gives an
// InvalidArgument Status whose message starts with the JSON path of the offending value and names
// the value: `ranks[3].tensors[5].global_shape[1]: expected a non-negative integer, got -4`.
// A signature read successfully has ranks numbered 0..N-1 in order, and every entry passes
// ValidateTensorSpec / ValidateObjectSpec. Cross-rank consistency (P4, P5, P11) is not checked
// here; that is validate.h's job.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/json_util.h"
#include "model/sharded.h"
#include "model/status.h"

namespace ckptspec {

inline constexpr const char* kSignatureFormat = "ckptspec.signature";
inline constexpr int kSignatureVersion = 1;
// Deepest nesting accepted in a rank's "common" tree (deeper trees are rejected, not recursed).
inline constexpr int kMaxCommonDepth = 256;

// Writes the documented form. Ranks are written in the order held; empty origins, absent digests,
// null common and irregular grids (empty axis_fragmentations) are left out. Digests are written as
// 16 lower-case hex digits. Replica ids are always written as arrays.
nlohmann::json SignatureToJson(const GlobalSignature& signature);

// Reads the documented form into *out (left unchanged on error). Members not listed in the form
// are rejected by name, so a misspelled optional field is an error rather than a silent default.
Status SignatureFromJson(const nlohmann::json& json, GlobalSignature* out);

// One entry in the form above (the members of "tensors[i]" / "objects[i]"), e.g. for the adapter
// protocol (docs/PROTOCOL.md). Reading checks as SignatureFromJson does; error messages start with
// the member's path inside the entry ("global_shape[1]: ...").
nlohmann::json TensorSpecToJson(const TensorSpec& spec);
nlohmann::json ObjectSpecToJson(const ObjectSpec& spec);
Status TensorSpecFromJson(const nlohmann::json& json, TensorSpec* out);
Status ObjectSpecFromJson(const nlohmann::json& json, ObjectSpec* out);

// Parses JSON text with the project's reader (json_util.h: ParseJson, default limits) and reads
// it as above. What the reader refuses (syntax, nesting deeper than kDefaultMaxJsonDepth, a key
// twice in one object, numbers that do not fit) gives an InvalidArgument Status with its message
// after "signature JSON: ": "signature JSON: parse error at byte 17, line 1, column 17: ...",
// "signature JSON: (root): duplicate key \"ranks\" at byte 60, line 1, column 60". The text is
// read streaming (ParseJsonStreamed): each tensor and object entry is built alone and read at
// once, so reading costs the signature read plus one entry's tree, never a tree of the whole dump.
// Results and errors are those of SignatureFromJson on the same document.
Status ParseSignature(std::string_view text, GlobalSignature* out);
// The same under the reader's `limits` instead of the defaults.
Status ParseSignature(std::string_view text, const JsonLimits& limits, GlobalSignature* out);

// True when a and b hold the same ranks, entries (all fields, digests and origins included, in
// order) and common trees. Otherwise false, with the first difference described in *difference
// when it is non-null ("ranks[2].tensors[0]: ...").
bool SameSignature(const GlobalSignature& a, const GlobalSignature& b, std::string* difference);

}  // namespace ckptspec
