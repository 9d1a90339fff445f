// FakeTarget: DynamicLogger::Record's setters, recording each call, for the
// RowMapper tests; NullTarget: the same setters doing nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "auditpipe/column.h"
#include "auditpipe/timestamp.h"
#include "input/value_parse.h"

namespace ingest_test {

class FakeTarget {
 public:
  explicit FakeTarget(std::vector<auditpipe::ColumnType> types = {}) : types_(std::move(types)) {}
  void set_null(std::size_t c) { put(c, "NULL"); }
  void set_bool(std::size_t c, bool v) { put(c, v ? "bool:true" : "bool:false"); }
  bool set_integer(std::size_t c, std::int64_t v) {
    if (c < types_.size()) {
      const auto r = auditpipe::ingest::integer_range(types_[c]);
      if (v < r.min || v > r.max) return false;
    }
    put(c, "int:" + std::to_string(v));
    return true;
  }
  void set_float64(std::size_t c, double v) { put(c, "float:" + std::to_string(v)); }
  void set_timestamp(std::size_t c, auditpipe::timestamp v) {
    char buf[auditpipe::timestamp::max_format_size];
    put(c, "ts:" + std::string(buf, v.format(buf, 'T')));
  }
  bool set_text(std::size_t c, std::string_view v) {
    put(c, "text:" + std::string(v));
    return false;
  }

  // Column -> what was set; every column set once, or "SET TWICE".
  std::map<std::size_t, std::string> calls;
  void clear() { calls.clear(); }

 private:
  void put(std::size_t c, std::string v) {
    auto [it, fresh] = calls.emplace(c, std::move(v));
    if (!fresh) it->second = "SET TWICE";
  }
  std::vector<auditpipe::ColumnType> types_;
};

struct NullTarget {
  void set_null(std::size_t) noexcept {}
  void set_bool(std::size_t, bool) noexcept {}
  bool set_integer(std::size_t, std::int64_t) noexcept { return true; }
  void set_float64(std::size_t, double) noexcept {}
  void set_timestamp(std::size_t, auditpipe::timestamp) noexcept {}
  bool set_text(std::size_t, std::string_view) noexcept { return false; }
};

}  // namespace ingest_test
