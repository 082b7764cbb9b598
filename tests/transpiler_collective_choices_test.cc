// collective_options (collective_choices.h): the options as `ctp transpile` and ctp.transpile take
// them, made into CollectiveOptions in one place.
#include <gtest/gtest.h>

#include "program_ir/error.h"
#include "transpilers/collective_choices.h"

namespace ctp {
namespace {

CollectiveChoices two_ranks(int rank) {
  CollectiveChoices choices;
  choices.rank = rank;
  choices.endpoints = {"10.0.0.1:6170", "10.0.0.2:6170"};
  return choices;
}

TEST(CollectiveOptionsFromChoices, CurrentEndpointDefaultsToTheRanksEntry) {
  EXPECT_EQ(collective_options(two_ranks(0)).current_endpoint, "10.0.0.1:6170");
  EXPECT_EQ(collective_options(two_ranks(1)).current_endpoint, "10.0.0.2:6170");
  CollectiveChoices named = two_ranks(1);
  named.current_endpoint = "10.0.0.9:1";
  EXPECT_EQ(collective_options(named).current_endpoint, "10.0.0.9:1");
  // Beyond the endpoints only with a current endpoint named, as Paddle accepts it.
  CollectiveChoices beyond = two_ranks(9);
  try {
    collective_options(beyond);
    ADD_FAILURE() << "rank 9 of 2 endpoints was accepted without a current endpoint";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "rank 9 has no entry in the endpoints (2 given): name the current endpoint");
  }
  beyond.current_endpoint = "10.0.0.1:6170";
  EXPECT_EQ(collective_options(beyond).rank, 9);
  // A negative rank is the transpiler's to report, as the reference does.
  EXPECT_EQ(collective_options(two_ranks(-1)).current_endpoint, "");
}

TEST(CollectiveOptionsFromChoices, NamesAndPlainValues) {
  CollectiveChoices choices = two_ranks(1);
  choices.nrings = 3;
  choices.wait_port = true;
  choices.params = "optimizer";
  choices.op_dialect = "paddle3";
  const CollectiveOptions c = collective_options(choices);
  EXPECT_EQ(c.rank, 1);
  EXPECT_EQ(c.endpoints, choices.endpoints);
  EXPECT_EQ(c.nrings, 3);
  EXPECT_TRUE(c.wait_port);
  EXPECT_EQ(c.params, ParamSource::kOptimizer);
  EXPECT_EQ(c.dialect, OpDialect::kPaddle3);
  const CollectiveOptions defaults = collective_options(two_ranks(0));
  EXPECT_EQ(defaults.params, ParamSource::kAuto);
  EXPECT_EQ(defaults.dialect, OpDialect::kLegacy);
  EXPECT_FALSE(defaults.nrings.has_value());
  choices.params = "all";
  EXPECT_THROW(collective_options(choices), Error);
  choices.params = "auto";
  choices.op_dialect = "paddle4";
  EXPECT_THROW(collective_options(choices), Error);
}

}  // namespace
}  // namespace ctp
