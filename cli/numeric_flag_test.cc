#include "cli/numeric_flag.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace ckptspec {
namespace {

template <typename T>
std::string ErrorOf(const std::string& text, NumberRange<T> range) {
  T value{};
  const Status s = ParseNumber("--flag", text, range, &value);
  EXPECT_EQ(s.code(), Status::Code::kInvalidArgument) << text << " parsed as " << value;
  return s.message();
}

TEST(NumericFlag, WholeNumbersWithinTheRangeParse) {
  int64_t v = 0;
  ASSERT_TRUE(ParseNumber<int64_t>("--tp", "8", {1, 64}, &v).ok());
  EXPECT_EQ(v, 8);
  ASSERT_TRUE(ParseNumber<int64_t>("--rank", "-1", {-1, 10}, &v).ok());
  EXPECT_EQ(v, -1);
  ASSERT_TRUE(ParseNumber<int64_t>("--tp", "+64", {1, 64}, &v).ok());
  EXPECT_EQ(v, 64);
  uint64_t seed = 0;
  ASSERT_TRUE(ParseNumber<uint64_t>("--seed", "18446744073709551615", {0, UINT64_MAX}, &seed).ok());
  EXPECT_EQ(seed, UINT64_MAX);
  int small = 0;
  ASSERT_TRUE(ParseNumber<int>("--layers", "2147483647", {1, INT32_MAX}, &small).ok());
  EXPECT_EQ(small, INT32_MAX);
  double seconds = 0;
  ASSERT_TRUE(ParseNumber<double>("--timeout", "2.5e1", {0.001, 100}, &seconds).ok());
  EXPECT_EQ(seconds, 25);
}

// Nothing is clamped or wrapped: 2^64 + ... and -1 for an unsigned flag are out of range, not
// UINT64_MAX or 2^64 - 1.
TEST(NumericFlag, OutOfRangeValuesNameFlagValueAndRange) {
  const NumberRange<uint64_t> any_seed{0, UINT64_MAX};
  EXPECT_EQ(ErrorOf("99999999999999999999", any_seed),
            "--flag '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_EQ(ErrorOf("18446744073709551616", any_seed),
            "--flag '18446744073709551616' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_EQ(ErrorOf("-1", any_seed),
            "--flag '-1' is out of range (accepted: 0 to 18446744073709551615)");
  EXPECT_EQ(ErrorOf<int64_t>("0", {1, 2147483648}),
            "--flag '0' is out of range (accepted: 1 to 2147483648)");
  EXPECT_EQ(ErrorOf<int>("2147483648", {0, INT32_MAX}),
            "--flag '2147483648' is out of range (accepted: 0 to 2147483647)");
  EXPECT_EQ(ErrorOf<double>("1e99", {0.001, 86400}),
            "--flag '1e99' is out of range (accepted: 0.001 to 86400)");
  EXPECT_EQ(ErrorOf<double>("1e400", {0.001, 86400}),
            "--flag '1e400' is out of range (accepted: 0.001 to 86400)");
  EXPECT_EQ(ErrorOf<double>("0", {0.001, 86400}),
            "--flag '0' is out of range (accepted: 0.001 to 86400)");
}

TEST(NumericFlag, MalformedNumbersAreNamed) {
  for (const std::string text :
       {"", "x2", "2x", " 2", "2 ", "1e3", "1.5", "0x10", "--", "+", "-"}) {
    EXPECT_EQ(ErrorOf<int64_t>(text, {0, 100}),
              "--flag '" + text + "' is not a whole number (accepted: 0 to 100)");
  }
  for (const std::string text : {"", "nan", "inf", "-inf", "0x1p3", "1s", " 1", "1,5"}) {
    EXPECT_EQ(ErrorOf<double>(text, {0, 100}),
              "--flag '" + text + "' is not a number (accepted: 0 to 100)");
  }
}

// One declaration drives parsing and --help.
TEST(NumericFlag, TheFlagChecksWhileParsingAndShowsItsRangeInHelp) {
  CLI::App app;
  uint64_t seed = 1;
  double timeout = 60;
  AddNumberFlag(&app, "--seed", &seed, NumberRange<uint64_t>{0, UINT64_MAX}, "RapidCheck seed");
  AddNumberFlag(&app, "--timeout", &timeout, NumberRange<double>{0.001, 86400}, "seconds");
  const std::string help = app.help();
  EXPECT_NE(help.find("--seed INT=1"), std::string::npos) << help;
  EXPECT_NE(help.find("RapidCheck seed (0 to 18446744073709551615)"), std::string::npos) << help;
  EXPECT_NE(help.find("seconds (0.001 to 86400)"), std::string::npos) << help;

  app.parse("--timeout 2.5 --seed 12", /*program_name_included=*/false);
  EXPECT_EQ(seed, 12u);
  EXPECT_EQ(timeout, 2.5);

  try {
    app.parse("--seed 99999999999999999999", false);
    ADD_FAILURE() << "an out-of-range seed parsed";
  } catch (const CLI::ValidationError& e) {
    EXPECT_STREQ(
        e.what(),
        "--seed '99999999999999999999' is out of range (accepted: 0 to 18446744073709551615)");
  }
  EXPECT_EQ(seed, 12u) << "a rejected value leaves the flag as it was";
}

}  // namespace
}  // namespace ckptspec
