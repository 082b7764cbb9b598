#include "program_ir/json_encoding.h"

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>

namespace ctp::json_encoding {
namespace {

constexpr uint32_t kCanonicalFloatNaN = 0x7fc00000u;
constexpr uint64_t kCanonicalDoubleNaN = 0x7ff8000000000000ull;

// A number with neither '.' nor an exponent would read back as an integer,
// which loses the sign of -0; give it a fraction.
void append_number_text(std::string& out, const char* begin, const char* end) {
  out.append(begin, end);
  for (const char* p = begin; p != end; ++p)
    if (*p == '.' || *p == 'e' || *p == 'E') return;
  out.append(".0");
}

template <typename Bits>
void append_nan(std::string& out, Bits bits, Bits canonical) {
  if (bits == canonical) {
    out.append("\"NaN\"");
    return;
  }
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, bits, 16);
  std::string hex(buf, res.ptr);
  hex.insert(0, sizeof(Bits) * 2 - hex.size(), '0');
  out.append("\"NaN(0x").append(hex).append(")\"");
}

template <typename Bits>
std::optional<Bits> nan_bits(std::string_view text) {
  constexpr std::string_view prefix = "NaN(0x";
  if (text.size() != prefix.size() + sizeof(Bits) * 2 + 1 || !text.starts_with(prefix) ||
      text.back() != ')')
    return std::nullopt;
  Bits bits = 0;
  const char* first = text.data() + prefix.size();
  const char* last = text.data() + text.size() - 1;
  auto res = std::from_chars(first, last, bits, 16);
  if (res.ec != std::errc() || res.ptr != last) return std::nullopt;
  return bits;
}

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

void append_float(std::string& out, float value) {
  if (std::isnan(value)) return append_nan(out, std::bit_cast<uint32_t>(value), kCanonicalFloatNaN);
  if (std::isinf(value)) {
    out.append(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  // Readers parse JSON numbers as doubles; the shortest float text, read as
  // a double and rounded to float, is `value` again in all but rare
  // double-rounding cases, which get the exact double instead.
  double as_double = 0;
  std::from_chars(buf, res.ptr, as_double);
  if (std::bit_cast<uint32_t>(static_cast<float>(as_double)) != std::bit_cast<uint32_t>(value))
    res = std::to_chars(buf, buf + sizeof buf, static_cast<double>(value));
  append_number_text(out, buf, res.ptr);
}

void append_double(std::string& out, double value) {
  if (std::isnan(value))
    return append_nan(out, std::bit_cast<uint64_t>(value), kCanonicalDoubleNaN);
  if (std::isinf(value)) {
    out.append(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    return;
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  append_number_text(out, buf, res.ptr);
}

std::optional<float> float_from_special(std::string_view text) {
  if (text == "NaN") return std::bit_cast<float>(kCanonicalFloatNaN);
  if (text == "Infinity") return INFINITY;
  if (text == "-Infinity") return -INFINITY;
  if (auto bits = nan_bits<uint32_t>(text)) {
    float f = std::bit_cast<float>(*bits);
    if (std::isnan(f)) return f;
  }
  return std::nullopt;
}

std::optional<double> double_from_special(std::string_view text) {
  if (text == "NaN") return std::bit_cast<double>(kCanonicalDoubleNaN);
  if (text == "Infinity") return static_cast<double>(INFINITY);
  if (text == "-Infinity") return -static_cast<double>(INFINITY);
  if (auto bits = nan_bits<uint64_t>(text)) {
    double d = std::bit_cast<double>(*bits);
    if (std::isnan(d)) return d;
  }
  return std::nullopt;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                 (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out.push_back(kBase64Alphabet[(n >> shift) & 63]);
  }
  std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kBase64Alphabet[(n >> 18) & 63]);
    out.push_back(kBase64Alphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kBase64Alphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pad = 0;
    if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) {
      int v = k >= 4 - pad ? 0 : base64_value(text[i + k]);
      if (v < 0) return std::nullopt;
      n = (n << 6) | static_cast<uint32_t>(v);
    }
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>(n >> 8));
    if (pad < 1) out.push_back(static_cast<char>(n));
    // Canonical form: the bits a padded group leaves unused are zero.
    if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) return std::nullopt;
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra;
    uint32_t min, cp;
    if ((c & 0xe0) == 0xc0) extra = 1, min = 0x80, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0) extra = 2, min = 0x800, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0) extra = 3, min = 0x10000, cp = c & 0x07;
    else return false;
    if (n - i <= static_cast<std::size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      auto cc = static_cast<uint8_t>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t run = 0;  // start of the pending run of bytes that need no escape
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<uint8_t>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out.append("\\\""); break;
      case '\\': out.append("\\\\"); break;
      case '\n': out.append("\\n"); break;
      case '\t': out.append("\\t"); break;
      case '\r': out.append("\\r"); break;
      case '\b': out.append("\\b"); break;
      case '\f': out.append("\\f"); break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out.append(esc, 6);
      }
    }
  }
  out.append(text.data() + run, text.size() - run);
  out.push_back('"');
}

}  // namespace ctp::json_encoding
