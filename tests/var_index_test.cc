// Block's var index (program_ir/var_index.h, open addressing with
// backward-shift deletion) against a std::map model: every name of a pool is
// looked up after each of thousands of random adds and removes, so that a
// removal that breaks another name's probe run is seen at once.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "program_ir/block.h"

namespace ctp {
namespace {

TEST(VarIndex, RandomAddsAndRemovesMatchAMap) {
  std::mt19937 random(15);
  std::vector<std::string> pool;
  for (int i = 0; i < 400; ++i)
    pool.push_back((i % 3 == 0 ? "fc_" : "a_much_longer_var_name_on_the_heap_") +
                   std::to_string(i));
  Block block;
  std::map<std::string, int> model;  // name -> the dtype it was added with
  for (int step = 0; step < 6000; ++step) {
    const std::string& name = pool[random() % pool.size()];
    if (random() % 3 != 0) {
      const int dtype = static_cast<int>(random() % 2);
      auto [var, added] = block.emplace_var(
          Var{.name = name, .dtype = dtype ? DataType::FP16 : DataType::FP32});
      EXPECT_EQ(added, !model.count(name)) << name << " at step " << step;
      if (added) model[name] = dtype;
      EXPECT_EQ(var.dtype, model[name] ? DataType::FP16 : DataType::FP32);
    } else {
      EXPECT_EQ(block.remove_var(name), model.erase(name) == 1) << name << " at step " << step;
    }
    for (const std::string& probe : pool) {
      const Var* var = block.find_var(probe);
      auto it = model.find(probe);
      ASSERT_EQ(var != nullptr, it != model.end()) << probe << " after step " << step;
      if (var) {
        ASSERT_EQ(var->name, probe);
        ASSERT_EQ(var->dtype, it->second ? DataType::FP16 : DataType::FP32);
      }
    }
  }
  EXPECT_EQ(block.var_count(), model.size());
  // A copy indexes the same names (its index is rebuilt over its own list).
  const Block copy = block;
  for (const std::string& probe : pool)
    EXPECT_EQ(copy.has_var(probe), model.count(probe) == 1) << probe;
}

}  // namespace
}  // namespace ctp
