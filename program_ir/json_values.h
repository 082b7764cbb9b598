// Reading typed values out of parsed pieces of ctp's JSON form, with errors
// that name the JSON path (json_convert.cc, json_messages.cc).
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "program_ir/json_convert.h"
#include "program_ir/json_encoding.h"

namespace ctp::json_convert {

// `what` ends the messages, as in "expected an integer for INTS".
class Values {
 public:
  explicit Values(const Converter& c) : c_(c) {}

  [[noreturn]] void fail(const JPath& at, const std::string& message) const {
    c_.fail(at, message);
  }

  void expect(bool ok, const Json& j, const JPath& at, const char* expected,
              std::string_view what) const {
    if (!ok)
      c_.fail(at, std::string("expected ") + expected + std::string(what) + ", got " + kind_of(j));
  }

  int64_t integer(const Json& j, const JPath& at, int64_t min, int64_t max,
                  std::string_view what = {}) const {
    expect(j.is_number_integer(), j, at, "an integer", what);
    if (j.is_number_unsigned()) {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(max))
        c_.fail(at, "value " + std::to_string(u) + " is out of range" + std::string(what));
      return static_cast<int64_t>(u);
    }
    auto v = j.get<int64_t>();
    if (v < min || v > max)
      c_.fail(at, "value " + std::to_string(v) + " is out of range" + std::string(what));
    return v;
  }
  int32_t int32(const Json& j, const JPath& at, std::string_view what = {}) const {
    return static_cast<int32_t>(integer(j, at, std::numeric_limits<int32_t>::min(),
                                        std::numeric_limits<int32_t>::max(), what));
  }
  int64_t int64(const Json& j, const JPath& at, std::string_view what = {}) const {
    return integer(j, at, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max(), what);
  }
  bool boolean(const Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_boolean(), j, at, "true or false", what);
    return j.get<bool>();
  }
  std::string string(Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_string(), j, at, "a string", what);
    return std::move(j.get_ref<std::string&>());
  }
  std::string bytes(const Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_string(), j, at, "a base64 string", what);
    auto decoded = json_encoding::base64_decode(j.get_ref<const std::string&>());
    if (!decoded) c_.fail(at, "not valid base64" + std::string(what));
    return std::move(*decoded);
  }
  double float64(const Json& j, const JPath& at, std::string_view what = {}) const {
    if (j.is_string()) {
      if (auto special = json_encoding::double_from_special(j.get_ref<const std::string&>())) return *special;
      c_.fail(at, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"" + std::string(what) +
                      ", got the string \"" + j.get<std::string>() + "\"");
    }
    expect(j.is_number(), j, at, "a number", what);
    const double d = j.get<double>();
    // 1e999 reads as infinity; infinities are spelled "Infinity".
    if (!std::isfinite(d)) c_.fail(at, "value is out of range" + std::string(what));
    return d;
  }
  float float32(const Json& j, const JPath& at, std::string_view what = {}) const {
    if (j.is_string()) {
      if (auto special = json_encoding::float_from_special(j.get_ref<const std::string&>())) return *special;
      c_.fail(at, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"" + std::string(what) +
                      ", got the string \"" + j.get<std::string>() + "\"");
    }
    expect(j.is_number(), j, at, "a number", what);
    auto f = static_cast<float>(j.get<double>());
    if (!std::isfinite(f)) c_.fail(at, "value is out of range" + std::string(what));
    return f;
  }

  template <typename T, typename One>
  std::vector<T> list(Json& j, const JPath& at, const JPath& items_at, std::string_view what,
                      One&& one) const {
    expect(j.is_array(), j, at, "an array", what);
    std::vector<T> out;
    out.reserve(j.size());
    long i = 0;
    for (Json& item : j) {
      out.push_back(one(item, items_at.at(i)));
      ++i;
    }
    return out;
  }

  Json::object_t& object(Json& j, const JPath& at, std::string_view what = {}) const {
    expect(j.is_object(), j, at, "an object", what);
    return j.get_ref<Json::object_t&>();
  }

 private:
  const Converter& c_;
};

// A SCALAR value: an object of the Scalar's fields, or base64 of its bytes
// (the form for bytes that no object gives back exactly); the bytes.
std::string scalar_from_json(const Values& v, Json& j, const JPath& at, std::string_view what);
// Paddle 1.x's op_compatible_map: an object of its pairs, or base64 of its
// bytes; the bytes.
std::string op_compatible_map_from_json(const Values& v, Json& j, const JPath& at);

}  // namespace ctp::json_convert
