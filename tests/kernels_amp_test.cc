// The CPU kernels of check_finite_and_unscale and update_loss_scaling
// against values worked out by hand: the unscaled gradients, the overflow
// flag (Inf and NaN), the zeroed gradients of an overflowing step, the scale
// going down after decr_every_n_nan_or_inf overflowing steps and up after
// incr_every_n_steps finite ones (never below 1, never to Inf), and errors.
#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels_test_util.h"

namespace ctp {
namespace {

using test::make_op;
using test::run_op;
using test::tensor;
using test::values;

Op check_op(std::vector<std::string> xs, std::vector<std::string> outs) {
  return make_op("check_finite_and_unscale", {{"X", std::move(xs)}, {"Scale", {"scale"}}},
                 {{"Out", std::move(outs)}, {"FoundInfinite", {"found"}}});
}

TEST(KernelsAmp, CheckFiniteUnscalesEveryGradient) {
  Scope s;
  s.var("scale") = tensor<float>({1}, {4});
  s.var("g0") = tensor<float>({3}, {2, -4, 8});
  s.var("g1") = tensor<double>({1}, {0.5});
  // g0 in place (as Paddle's programs write it), g1 into another var.
  run_op(s, check_op({"g0", "g1"}, {"g0", "u1"}));
  EXPECT_EQ(values<float>(s.get("g0")), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(values<double>(s.get("u1")), (std::vector<double>{0.125}));
  EXPECT_EQ(s.get("found").dtype(), DataType::BOOL);
  EXPECT_FALSE(s.get("found").data<bool>()[0]);
}

TEST(KernelsAmp, InfOrNanInAnyGradientIsFound) {
  for (const float bad : {std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()}) {
    Scope s;
    s.var("scale") = tensor<float>({1}, {2});
    s.var("g0") = tensor<float>({2}, {1, 2});
    s.var("g1") = tensor<float>({3}, {3, bad, 5});
    run_op(s, check_op({"g0", "g1"}, {"g0", "g1"}));
    EXPECT_TRUE(s.get("found").data<bool>()[0]) << bad;
    EXPECT_EQ(values<float>(s.get("g0")), (std::vector<float>{0.5f, 1.0f}));
  }
}

struct State {
  float scale;
  int32_t good, bad;
};

// One update_loss_scaling step on gradient g (in place) with the state in
// the scope; returns the new state. incr after 2 finite steps (x2), decr
// after 2 overflowing ones (x0.5).
State update(Scope& s, bool found, std::vector<NamedAttribute> extra = {}) {
  s.var("found") = tensor<bool>({1}, {found});
  std::vector<NamedAttribute> attrs = {{"incr_every_n_steps", Attribute(int32_t{2})},
                                       {"decr_every_n_nan_or_inf", Attribute(int32_t{2})},
                                       {"incr_ratio", Attribute(2.0f)},
                                       {"decr_ratio", Attribute(0.5f)}};
  for (auto& a : extra) {
    bool replaced = false;
    for (auto& have : attrs)
      if (have.name == a.name) {
        have.value = a.value;
        replaced = true;
      }
    if (!replaced) attrs.push_back(std::move(a));
  }
  run_op(s, make_op("update_loss_scaling",
                    {{"X", {"g"}}, {"FoundInfinite", {"found"}}, {"PrevLossScaling", {"scale"}},
                     {"InGoodSteps", {"good"}}, {"InBadSteps", {"bad"}}},
                    {{"Out", {"g"}}, {"LossScaling", {"scale"}}, {"OutGoodSteps", {"good"}},
                     {"OutBadSteps", {"bad"}}},
                    std::move(attrs)));
  return {s.get("scale").data<float>()[0], s.get("good").data<int32_t>()[0],
          s.get("bad").data<int32_t>()[0]};
}

void start(Scope& s, float scale, int32_t good = 0, int32_t bad = 0) {
  s.var("scale") = tensor<float>({1}, {scale});
  s.var("good") = tensor<int32_t>({1}, {good});
  s.var("bad") = tensor<int32_t>({1}, {bad});
  s.var("g") = tensor<float>({2}, {3, -1});
}

TEST(KernelsAmp, OverflowZeroesTheGradientsAndLowersTheScaleEveryNth) {
  Scope s;
  start(s, 1024, /*good=*/1);
  State st = update(s, true);
  EXPECT_EQ(values<float>(s.get("g")), (std::vector<float>{0, 0}));
  EXPECT_EQ(st.scale, 1024.0f);  // first overflow: counted only
  EXPECT_EQ(st.good, 0);
  EXPECT_EQ(st.bad, 1);
  s.var("g") = tensor<float>({2}, {3, -1});
  st = update(s, true);
  EXPECT_EQ(st.scale, 512.0f);  // second: down by decr_ratio, count reset
  EXPECT_EQ(st.bad, 0);
  EXPECT_EQ(values<float>(s.get("g")), (std::vector<float>{0, 0}));
}

TEST(KernelsAmp, FiniteStepsKeepTheGradientsAndRaiseTheScaleEveryNth) {
  Scope s;
  start(s, 8, 0, /*bad=*/1);
  State st = update(s, false);
  EXPECT_EQ(values<float>(s.get("g")), (std::vector<float>{3, -1}));
  EXPECT_EQ(st.scale, 8.0f);
  EXPECT_EQ(st.good, 1);
  EXPECT_EQ(st.bad, 0);  // a finite step resets the overflow count
  st = update(s, false);
  EXPECT_EQ(st.scale, 16.0f);
  EXPECT_EQ(st.good, 0);
  // An overflow in between starts the finite count again.
  update(s, false);
  update(s, true);
  st = update(s, false);
  EXPECT_EQ(st.scale, 16.0f);
  EXPECT_EQ(st.good, 1);
}

TEST(KernelsAmp, TheScaleStaysAtLeastOneAndFinite) {
  Scope s;
  start(s, 1.5f, 0, 1);
  EXPECT_EQ(update(s, true).scale, 1.0f);  // 0.75 is clamped to 1
  const float big = std::numeric_limits<float>::max();
  start(s, big, 1, 0);
  const State st = update(s, false);
  EXPECT_EQ(st.scale, big);  // x2 would be Inf: kept
  EXPECT_EQ(st.good, 0);
}

TEST(KernelsAmp, StopUpdateKeepsTheStateButStillZeroes) {
  Scope s;
  start(s, 64, 0, 1);
  const State st = update(s, true, {{"stop_update", Attribute(true)}});
  EXPECT_EQ(st.scale, 64.0f);
  EXPECT_EQ(st.bad, 1);
  EXPECT_EQ(values<float>(s.get("g")), (std::vector<float>{0, 0}));
}

TEST(KernelsAmp, BadInputsAreErrorsNamingTheOp) {
  Scope s;
  start(s, 64);
  s.var("found") = tensor<int32_t>({1}, {1});
  try {
    run_op(s, make_op("update_loss_scaling",
                      {{"X", {"g"}}, {"FoundInfinite", {"found"}}, {"PrevLossScaling", {"scale"}},
                       {"InGoodSteps", {"good"}}, {"InBadSteps", {"bad"}}},
                      {{"Out", {"g"}}, {"LossScaling", {"scale"}}, {"OutGoodSteps", {"good"}},
                       {"OutBadSteps", {"bad"}}},
                      {{"incr_every_n_steps", Attribute(int32_t{2})},
                       {"decr_every_n_nan_or_inf", Attribute(int32_t{2})},
                       {"incr_ratio", Attribute(2.0f)},
                       {"decr_ratio", Attribute(0.5f)}}));
    FAIL() << "an INT32 FoundInfinite accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'update_loss_scaling'"), std::string::npos) << what;
    EXPECT_NE(what.find("input FoundInfinite 'found' has dtype INT32; it must be BOOL"),
              std::string::npos)
        << what;
  }
  s.var("found") = tensor<bool>({1}, {false});
  try {
    update(s, false, {{"decr_ratio", Attribute(0.0f)}});
    FAIL() << "decr_ratio 0 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("decr_ratio"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctp
