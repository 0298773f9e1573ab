#include "targets/process/protocol.h"

#include <gtest/gtest.h>

#include "model/signature_json.h"

namespace ckptspec {
namespace {

using nlohmann::json;

TensorSpec Spec(const std::string& key) {
  TensorSpec t;
  t.key = key;
  t.dtype = DType::kBFloat16;
  t.global_shape = {8, 4};
  t.global_offset = {4, 0};
  t.local_shape = {4, 4};
  t.axis_fragmentations = {2, 1};
  t.replica_id = {0, 1, 0};
  return t;
}

TEST(Protocol, SaveCallsRoundTrip) {
  SaveCall call;
  call.directory = "/d";
  call.iteration = 12;
  call.options.async = true;
  call.options.validate = false;
  call.options.layout = {{"tp", 2}};
  call.tensors.push_back({Spec("w"), "/s/t0", std::nullopt});
  ObjectSpec o;
  o.key = "rng";
  o.global_shape = {2};
  o.global_offset = {1};
  call.objects.push_back({o, "/s/o0", std::nullopt});
  call.common = {{"iteration", 12}};
  json j = json::object();
  SaveCallToJson(call, &j);
  EXPECT_EQ(j["tensors"][0]["file"], "/s/t0");
  EXPECT_EQ(j["tensors"][0]["dtype"], "bf16");
  SaveCall back;
  ASSERT_TRUE(SaveCallFromJson(j, &back).ok());
  EXPECT_EQ(back.iteration, 12);
  EXPECT_TRUE(back.options.async);
  EXPECT_FALSE(back.options.validate);
  EXPECT_EQ(back.options.layout, call.options.layout);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors[0].spec, call.tensors[0].spec);
  EXPECT_EQ(back.objects[0].spec, o);
  EXPECT_EQ(back.objects[0].file, "/s/o0");
  EXPECT_EQ(back.common, call.common);
}

// Revision 3: each save tensor's placement, the poll request and reply, the poll capability.
TEST(Protocol, PlacementsPollsAndThePollCapabilityRoundTrip) {
  SaveCall call;
  call.tensors.push_back({Spec("w"), "/s/t0", std::nullopt});
  call.tensors.push_back({Spec("v"), "/s/t1", std::nullopt});
  call.placements = {Placement::kHost};  // the second tensor's is left to the default
  json j = json::object();
  SaveCallToJson(call, &j);
  EXPECT_EQ(j["tensors"][0]["placement"], "host");
  EXPECT_EQ(j["tensors"][1]["placement"], "device");
  SaveCall back;
  ASSERT_TRUE(SaveCallFromJson(j, &back).ok());
  EXPECT_EQ(back.placements, (std::vector<Placement>{Placement::kHost, Placement::kDevice}));
  EXPECT_EQ(back.tensors[1].spec, call.tensors[1].spec);
  j["tensors"][1].erase("placement");  // revision 2 requests: the device
  ASSERT_TRUE(SaveCallFromJson(j, &back).ok());
  EXPECT_EQ(back.placements[1], Placement::kDevice);
  j["tensors"][0]["placement"] = "gpu";
  EXPECT_EQ(SaveCallFromJson(j, &back).message(),
            "save.tensors[0].placement: unknown value \"gpu\"");

  PollCall poll;
  poll.updates.push_back({3, "/s/r0.t3", std::nullopt});
  json pj = json::object();
  PollCallToJson(poll, &pj);
  PollCall poll_back;
  ASSERT_TRUE(PollCallFromJson(pj, &poll_back).ok());
  ASSERT_EQ(poll_back.updates.size(), 1u);
  EXPECT_EQ(poll_back.updates[0].index, 3);
  EXPECT_EQ(poll_back.updates[0].file, "/s/r0.t3");
  pj["tensors"][0]["index"] = -1;
  EXPECT_EQ(PollCallFromJson(pj, &poll_back).message(),
            "poll.tensors[0].index: expected a non-negative integer, got -1");
  EXPECT_TRUE(PollCallFromJson(json::object(), &poll_back).ok());  // no updates
  EXPECT_TRUE(poll_back.updates.empty());

  PollReply reply;
  reply.complete = false;
  json rj = json::object();
  PollReplyToJson(reply, &rj);
  PollReply reply_back;
  ASSERT_TRUE(PollReplyFromJson(rj, &reply_back).ok());
  EXPECT_FALSE(reply_back.complete);
  EXPECT_EQ(PollReplyFromJson(json::object(), &reply_back).message(),
            "poll reply: missing required member \"complete\"");

  HelloReply hello;
  hello.poll = true;
  json hj = json::object();
  HelloReplyToJson(hello, &hj);
  EXPECT_EQ(hj["capabilities"]["poll"], true);
  HelloReply hello_back;
  ASSERT_TRUE(HelloReplyFromJson(hj, &hello_back).ok());
  EXPECT_TRUE(hello_back.poll);
  EXPECT_FALSE(hello_back.reset);
  hj["capabilities"]["poll"] = "yes";
  EXPECT_EQ(HelloReplyFromJson(hj, &hello_back).message(),
            "hello.capabilities.poll: expected a boolean, got \"yes\"");
  hj["capabilities"]["poll"] = true;
  hj["capabilities"]["telepathy"] = true;
  EXPECT_EQ(HelloReplyFromJson(hj, &hello_back).message(),
            "hello.capabilities: unknown member \"telepathy\"");
}

// Revision 4: an entry's range of a packed file, in save, load and poll; the packed capability.
TEST(Protocol, RangesOfPackedFilesAndThePackedCapabilityRoundTrip) {
  SaveCall save;
  save.tensors.push_back({Spec("w"), "/s/r0.save", FileRange{0, 16}});
  save.tensors.push_back({Spec("v"), "/s/r0.t1", std::nullopt});  // a file of its own
  ObjectSpec o;
  o.key = "rng";
  save.objects.push_back({o, "/s/r0.save", FileRange{16, 5}});
  json j = json::object();
  SaveCallToJson(save, &j);
  EXPECT_EQ(j["tensors"][0]["offset"], 0);
  EXPECT_EQ(j["tensors"][0]["length"], 16);
  EXPECT_FALSE(j["tensors"][1].contains("offset"));
  SaveCall back;
  ASSERT_TRUE(SaveCallFromJson(j, &back).ok());
  EXPECT_EQ(back.tensors[0].range, (FileRange{0, 16}));
  EXPECT_EQ(back.tensors[0].spec, save.tensors[0].spec);  // the range is not the signature's
  EXPECT_FALSE(back.tensors[1].range.has_value());
  EXPECT_EQ(back.objects[0].range, (FileRange{16, 5}));
  EXPECT_EQ(back.objects[0].spec, o);

  LoadCall load;
  load.tensors.push_back({Spec("w"), "/s/r0.load", FileRange{32, 16}});
  json lj = json::object();
  LoadCallToJson(load, &lj);
  LoadCall load_back;
  ASSERT_TRUE(LoadCallFromJson(lj, &load_back).ok());
  EXPECT_EQ(load_back.tensors[0].range, (FileRange{32, 16}));

  PollCall poll;
  poll.updates.push_back({2, "/s/r0.poll", FileRange{8, 4}});
  json pj = json::object();
  PollCallToJson(poll, &pj);
  PollCall poll_back;
  ASSERT_TRUE(PollCallFromJson(pj, &poll_back).ok());
  EXPECT_EQ(poll_back.updates[0].range, (FileRange{8, 4}));

  // Both members or neither; integers >= 0 whose range ends before 2^63.
  const auto refusal = [](json entry) {
    json request = {{"directory", "/d"}, {"iteration", 1}, {"tensors", json::array({entry})}};
    SaveCall out;
    return SaveCallFromJson(request, &out).message();
  };
  json entry = j["tensors"][0];
  entry.erase("length");
  EXPECT_NE(refusal(entry).find("save.tensors[0]: \"offset\" and \"length\" come together"),
            std::string::npos)
      << refusal(entry);
  entry = j["tensors"][0];
  entry["offset"] = -1;
  EXPECT_NE(refusal(entry).find("save.tensors[0].offset"), std::string::npos) << refusal(entry);
  entry["offset"] = "0";
  EXPECT_NE(refusal(entry).find("save.tensors[0].offset"), std::string::npos) << refusal(entry);
  entry["offset"] = INT64_MAX;
  EXPECT_EQ(refusal(entry),
            "save.tensors[0].length: expected a length whose range ends before 2^63, got 16");
  pj["tensors"][0]["length"] = -4;
  EXPECT_NE(PollCallFromJson(pj, &poll_back).message().find("poll.tensors[0].length"),
            std::string::npos);

  HelloReply hello;
  hello.packed = true;
  json hj = json::object();
  HelloReplyToJson(hello, &hj);
  EXPECT_EQ(hj["capabilities"]["packed"], true);
  HelloReply hello_back;
  ASSERT_TRUE(HelloReplyFromJson(hj, &hello_back).ok());
  EXPECT_TRUE(hello_back.packed);
  EXPECT_FALSE(hello_back.poll);
  hj["capabilities"].erase("packed");
  ASSERT_TRUE(HelloReplyFromJson(hj, &hello_back).ok());
  EXPECT_FALSE(hello_back.packed);  // an adapter of revision 3 or before
}

TEST(Protocol, LoadCallsAndRepliesRoundTrip) {
  LoadCall call;
  call.directory = "/d";
  call.strict = StrictMode::kReturnAll;
  call.tensors.push_back({Spec("w"), "/s/t0", std::nullopt});
  json j = json::object();
  LoadCallToJson(call, &j);
  EXPECT_TRUE(j["iteration"].is_null());
  EXPECT_EQ(j["strict"], "return_all");
  LoadCall back;
  ASSERT_TRUE(LoadCallFromJson(j, &back).ok());
  EXPECT_FALSE(back.iteration.has_value());
  EXPECT_EQ(back.strict, StrictMode::kReturnAll);
  j["iteration"] = 7;
  ASSERT_TRUE(LoadCallFromJson(j, &back).ok());
  EXPECT_EQ(back.iteration, 7);

  LoadReply reply;
  reply.iteration = 7;
  reply.dropped = {"x"};
  reply.missing = {"y"};
  json r = json::object();
  LoadReplyToJson(reply, &r);
  LoadReply reply_back;
  ASSERT_TRUE(LoadReplyFromJson(r, &reply_back).ok());
  EXPECT_EQ(reply_back.dropped, reply.dropped);
  EXPECT_EQ(reply_back.missing, reply.missing);
  // The lists may be left out when empty.
  ASSERT_TRUE(LoadReplyFromJson({{"iteration", 3}, {"common", json::object()}}, &reply_back).ok());
  EXPECT_TRUE(reply_back.dropped.empty());
}

TEST(Protocol, BadMessagesNameTheMember) {
  LoadCall call;
  json j = {{"directory", "/d"}, {"tensors", json::array({TensorSpecToJson(Spec("w"))})}};
  EXPECT_EQ(LoadCallFromJson(j, &call).message(),
            "load.tensors[0]: missing required member \"file\"");
  j["tensors"][0]["file"] = "/f";
  j["tensors"][0]["global_shape"] = {8, -4};
  EXPECT_EQ(LoadCallFromJson(j, &call).message().rfind("load.tensors[0]: global_shape[1]: ", 0), 0u)
      << LoadCallFromJson(j, &call).message();
  j = {{"directory", "/d"}, {"strict", "raise_sometimes"}};
  EXPECT_EQ(LoadCallFromJson(j, &call).message(), "load.strict: unknown value \"raise_sometimes\"");
  SaveCall save;
  EXPECT_EQ(SaveCallFromJson({{"directory", "/d"}, {"iteration", "ten"}}, &save).message(),
            "save.iteration: expected an integer, got \"ten\"");
  LoadReply reply;
  EXPECT_EQ(
      LoadReplyFromJson({{"iteration", 1}, {"common", json::object()}, {"dropped", {1}}}, &reply)
          .message(),
      "load reply.dropped[0]: expected a string, got 1");
}

TEST(Protocol, CapabilitiesAreStrictAndErrorsCarryStatusCodes) {
  Capabilities c;
  ASSERT_TRUE(CapabilitiesFromJson({{"resharding", true}}, &c).ok());
  EXPECT_TRUE(c.resharding);
  EXPECT_FALSE(c.async);
  EXPECT_EQ(CapabilitiesFromJson({{"reshard", true}}, &c).message(),
            "capabilities: unknown member \"reshard\"");
  EXPECT_EQ(CapabilitiesFromJson({{"async", 1}}, &c).message(),
            "capabilities.async: expected a boolean, got 1");

  Status s;
  ASSERT_TRUE(ErrorFromJson(ErrorToJson(Status::FailedPrecondition("busy")), &s).ok());
  EXPECT_EQ(s.code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "busy");
  EXPECT_EQ(ErrorFromJson({{"code", "OK"}, {"message", ""}}, &s).message(),
            "error.code: unknown value \"OK\"");
  EXPECT_FALSE(ErrorFromJson({{"code", "NotFound"}}, &s).ok());
}

}  // namespace
}  // namespace ckptspec
