// WireVars on its own (program_ir/wire_vars.h): the name index in both entry
// widths, agreeing with a map over many names (enough that the 8-bit tags
// of the narrow entries collide), duplicates, removal, records appended
// after the reader's, decoding once, and take_all's order.
#include <gtest/gtest.h>

#include <list>
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

// Records appended after the reader's (a rewrite's new vars) are found as
// the index grows and is rebuilt, beside removals and a name re-added.
TEST_P(WireVarsWidths, FindsAppendedRecordsAsTheIndexGrows) {
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("read" + std::to_string(i));
  WireVars vars(names.size(), nullptr, decode_name);
  for (std::size_t i = 0; i < names.size(); ++i) vars.set(i, names[i], names[i], {});
  ASSERT_EQ(vars.index_names(GetParam()), WireVars::npos);
  vars.remove(7);
  std::map<std::string, std::size_t> expected;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (i != 7) expected[names[i]] = i;
  for (int i = 0; i < 5000; ++i) {
    // Bytes around the name, as in a VarDesc; every tenth already a Var.
    const std::string name = "new" + std::to_string(i * 7919 % 100003);
    const std::string bytes = "<" + name + ">";
    const auto [r, added] =
        i % 10 == 0 ? vars.emplace_decoded(decode_name(name))
                    : vars.emplace_bytes(bytes, std::string_view(bytes).substr(1, name.size()),
                                         WireVarFlags{.persistable = i % 2 == 0});
    EXPECT_TRUE(added) << name;
    expected[name] = r;
  }
  // A name declared is not added again; one removed is.
  EXPECT_EQ(vars.emplace_bytes(names[8], names[8], {}), std::make_pair(std::size_t{8}, false));
  Var taken = decode_name("new0");
  EXPECT_EQ(vars.emplace_decoded(std::move(taken)), std::make_pair(expected.at("new0"), false));
  EXPECT_EQ(taken.name, "new0");  // not moved from
  const auto [again, added] = vars.emplace_bytes(names[7], names[7], {});
  EXPECT_TRUE(added);
  expected[names[7]] = again;
  EXPECT_EQ(vars.live_count(), expected.size());
  for (const auto& [name, r] : expected) EXPECT_EQ(vars.find(name), r) << name;
  EXPECT_EQ(vars.find("new1"), WireVars::npos);
  EXPECT_EQ(vars.find("read100"), WireVars::npos);
  const std::size_t r = expected.at("new7919");  // i = 1: bytes, not persistable
  EXPECT_EQ(vars.bytes(r), "<new7919>");
  EXPECT_EQ(vars.decoded(r), nullptr);
  EXPECT_EQ(vars.decode(r).name, "<new7919>");  // decode_name decodes all of the bytes
  EXPECT_FALSE(vars.flags(r).persistable);
  EXPECT_TRUE(vars.flags(expected.at("new15838")).persistable);  // i = 2
  std::list<Var> all = vars.take_all();
  ASSERT_EQ(all.size(), expected.size());
  EXPECT_EQ(all.front().name, "read0");
  EXPECT_EQ(std::next(all.begin(), 99)->name, "new0");  // after read0..read99 less read7
  EXPECT_EQ(all.back().name, names[7]);
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
