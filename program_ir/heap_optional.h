// An optional value kept on the heap: one pointer in its holder, for fields
// that nearly every object leaves empty (a Var's reader and tuple
// descriptions, a message's unknown fields). A program holds a Var per
// declared variable, so 8 bytes instead of std::optional's full value add up
// to tens of MB on a large program. Copies are deep; it reads like
// std::optional (has_value, *, ->, emplace, = value, = std::nullopt).
#pragma once
#include <memory>
#include <optional>
#include <utility>

namespace ctp {

template <typename T>
class HeapOptional {
 public:
  HeapOptional() = default;
  HeapOptional(std::nullopt_t) {}
  HeapOptional(T value) : value_(std::make_unique<T>(std::move(value))) {}
  HeapOptional(const HeapOptional& other)
      : value_(other.value_ ? std::make_unique<T>(*other.value_) : nullptr) {}
  HeapOptional(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(const HeapOptional& other) {
    if (this != &other) value_ = other.value_ ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  HeapOptional& operator=(HeapOptional&&) noexcept = default;
  HeapOptional& operator=(std::nullopt_t) {
    value_.reset();
    return *this;
  }

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  template <typename... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() { value_.reset(); }

  // Equal when both are empty or both hold equal values.
  friend bool operator==(const HeapOptional& a, const HeapOptional& b) {
    if (!a.value_ || !b.value_) return !a.value_ && !b.value_;
    return *a.value_ == *b.value_;
  }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace ctp
