// How ctp's JSON form spells values JSON has no type for (docs/json-format.md):
// floats that must read back bit-identical (NaN, infinities, negative zero),
// raw bytes as base64, and the UTF-8 check every JSON string must pass.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ctp::json_encoding {

// Appends a FLOAT as JSON: a number whose double value casts back to exactly
// `value` (the shortest form that does, with ".0" added where it would
// otherwise read as an integer), or for non-finite values a string:
// "NaN", "Infinity", "-Infinity", or "NaN(0x7fc00001)" (the bits) for a
// NaN other than the positive quiet NaN 0x7fc00000.
void append_float(std::string& out, float value);
// The same for FLOAT64 values (NaN bits as 16 hex digits).
void append_double(std::string& out, double value);

// The non-finite spellings above, read back; nullopt for other strings.
std::optional<float> float_from_special(std::string_view text);
std::optional<double> double_from_special(std::string_view text);

// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

// Whether `text` is well-formed UTF-8 (what a JSON parser accepts).
bool is_valid_utf8(std::string_view text);
// Appends `text` as a quoted JSON string; `text` must be valid UTF-8.
void append_json_string(std::string& out, std::string_view text);

}  // namespace ctp::json_encoding
