// Property: for random programs (tests/random_program.h), proto -> JSON ->
// proto gives the same Program and the same bytes.
#include <gtest/gtest.h>

#include "program_ir/json_io.h"
#include "program_ir/proto_io.h"
#include "tests/random_program.h"

namespace ctp {
namespace {

using test::RandomProgram;

TEST(JsonIoProperty, ProtoToJsonToProtoIsIdentity) {
  int with_nan = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    RandomProgram gen(seed);
    const Program original = gen.make();
    SCOPED_TRACE("seed " + std::to_string(seed));

    const std::string proto = serialize_program_proto(original);
    const Program from_proto = parse_program_proto(proto, "random.pb");
    const std::string json = program_to_json(from_proto);
    const Program from_json = parse_program_json(json, "random.json");
    const std::string proto_again = serialize_program_proto(from_json);

    ASSERT_EQ(proto_again, proto);
    ASSERT_EQ(program_to_json(from_json), json);
    // Program == compares floats by value, and NaN equals nothing; the byte
    // comparisons above cover those programs.
    if (gen.made_nan()) {
      ++with_nan;
    } else {
      ASSERT_EQ(from_proto, original);
      ASSERT_EQ(from_json, original);
    }
  }
  // Both halves of the check ran.
  EXPECT_GT(with_nan, 20);
  EXPECT_LT(with_nan, 380);
}

}  // namespace
}  // namespace ctp
