// WireVars on its own (program_ir/wire_vars.h): the name index in both entry
// widths, agreeing with a map over many names (enough that the 8-bit tags
// of the narrow entries collide), duplicates, removal, decoding once, and
// take_all's order.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "program_ir/wire_vars.h"

namespace ctp {
namespace {

// The "bytes" of each record are its name: decoding makes a Var of it.
Var decode_name(std::string_view bytes) {
  Var var;
  var.name = std::string(bytes);
  return var;
}

class WireVarsWidths : public ::testing::TestWithParam<WireVars::IndexWidth> {};

TEST_P(WireVarsWidths, FindsWhatAMapFinds) {
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back("v" + std::to_string(i * 7919 % 100003));
  WireVars vars(names.size(), nullptr, decode_name);
  for (std::size_t i = 0; i < names.size(); ++i) vars.set(i, names[i], names[i], {});
  ASSERT_EQ(vars.index_names(GetParam()), WireVars::npos);
  std::map<std::string, std::size_t> expected;
  for (std::size_t i = 0; i < names.size(); ++i) expected[names[i]] = i;
  for (const auto& [name, i] : expected) EXPECT_EQ(vars.find(name), i) << name;
  for (int i = 0; i < 2000; ++i) {
    const std::string absent = "w" + std::to_string(i);
    EXPECT_EQ(vars.find(absent), WireVars::npos) << absent;
  }
  // Removed records are gone; the others stay where they were.
  for (std::size_t i = 0; i < names.size(); i += 3) vars.remove(i);
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(vars.find(names[i]), i % 3 == 0 ? WireVars::npos : i) << names[i];
  EXPECT_EQ(vars.live_count(), names.size() - (names.size() + 2) / 3);
}

TEST_P(WireVarsWidths, NamesTheFirstRecordDeclaredTwice) {
  const std::vector<std::string> names = {"a", "b", "c", "b", "a"};
  WireVars vars(names.size(), nullptr, decode_name);
  for (std::size_t i = 0; i < names.size(); ++i) vars.set(i, names[i], names[i], {});
  EXPECT_EQ(vars.index_names(GetParam()), 3u);
}

INSTANTIATE_TEST_SUITE_P(Entries, WireVarsWidths,
                         ::testing::Values(WireVars::IndexWidth::kFit,
                                           WireVars::IndexWidth::kWide));

TEST(WireVars, DecodesOnceAndTakesAllInOrder) {
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  WireVars vars(names.size(), nullptr, decode_name);
  for (std::size_t i = 0; i < names.size(); ++i)
    vars.set(i, names[i], names[i], WireVarFlags{.is_parameter = i == 2});
  ASSERT_EQ(vars.index_names(), WireVars::npos);
  EXPECT_TRUE(vars.flags(2).is_parameter);
  EXPECT_FALSE(vars.flags(1).is_parameter);
  EXPECT_EQ(vars.decoded(2), nullptr);
  Var& c = vars.decode(2);
  EXPECT_EQ(&vars.decode(2), &c);
  EXPECT_EQ(vars.decoded(2), &c);
  c.persistable = true;
  vars.decode(1);
  vars.remove(1);
  EXPECT_EQ(vars.decoded(1), nullptr);
  std::list<Var> all = vars.take_all();
  std::vector<std::string> order;
  for (const Var& v : all) order.push_back(v.name);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c", "d"}));
  EXPECT_EQ(&*std::next(all.begin()), &c);  // the decoded Var kept its node
  EXPECT_TRUE(c.persistable);
  EXPECT_EQ(vars.size(), 0u);
}

}  // namespace
}  // namespace ctp
