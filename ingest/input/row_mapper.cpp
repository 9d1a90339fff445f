// RowMapper's parsing and conversion: the JSON walk over simdjson's DOM,
// the CSV/TSV field splitter, and the per-type conversions into FieldValue.
#include "input/row_mapper.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "auditpipe/status.h"
#include "auditpipe/utf8.h"
#include "input/value_parse.h"

namespace auditpipe::ingest {

static_assert(record_padding >= simdjson::SIMDJSON_PADDING,
              "the reader's padding is what simdjson parses in place with");

namespace {

constexpr std::size_t shown_value = 60;

// A value for a message: cut to ~60 bytes.
std::string shown(std::string_view v) {
  if (v.size() <= shown_value) return std::string(v);
  return std::string(v.substr(0, shown_value)) + "...";
}
std::string quoted(std::string_view v) {
  return "\"" + shown(v) + "\"";
}

bool iequal(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x + 32);
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y + 32);
    if (x != y) return false;
  }
  return true;
}

// One step of a JSON path tree: a key and either a column or nested keys.
constexpr std::string_view repeated_key_rule =
    "appears more than once in the line; which value is meant is not defined, so the line is "
    "rejected";

struct PathNode {
  struct Entry {
    std::string key;
    int column = -1;    // a leaf
    int child = -1;     // a nested object's node
    int left_out = -1;  // a field of a column left to the database (left_out_names)
  };
  std::vector<Entry> entries;
  const Entry* find(std::string_view key) const noexcept {
    for (const Entry& e : entries)
      if (e.key == key) return &e;
    return nullptr;
  }
};

}  // namespace

struct RowMapper::Impl {
  struct Plan {
    ColumnSpec spec;
    std::string path;          // the field it reads
    bool constant = false;     // a --set: `fixed` always
    bool has_default = false;  // `fixed` when missing
    FieldValue fixed;          // the set or default value, converted
    std::string fixed_text;    // owns a text constant
    int field = -1;            // CSV: header index; -1 none
  };

  Format format;
  std::vector<ColumnSpec> specs;
  std::vector<Plan> plans;
  std::vector<PathNode> nodes;           // JSON: nodes[0] is the top level
  std::vector<std::uint32_t> seen;       // per column: the line that gave it a value
  std::vector<std::uint32_t> node_seen;  // per nested object: the line that had it
  std::uint32_t generation = 0;
  bool header_set = false;
  std::size_t header_fields = 0;
  simdjson::dom::parser parser;
  std::vector<std::string> composite;  // text columns' JSON objects/arrays
  std::vector<char> number_buf;        // text columns' JSON numbers
  static constexpr std::size_t number_text_size = 32;
  std::string repair;   // a JSON line's repaired copy (grows, never shrinks)
  std::string unquote;  // CSV: unquoted fields (grows, never shrinks)
  std::vector<std::string_view> fields;
  std::vector<std::uint8_t> field_quoted;
  std::uint64_t repaired = 0;
  std::vector<std::string> left_out_names;  // MappingOptions::left_to_database
  std::vector<int> left_out_fields;         // CSV: their header indexes

  // A record that gives a value to a column this load leaves to the database.
  bool left_out(std::size_t k, std::string& reason) const {
    const std::string& name = left_out_names[k];
    reason = "field \"" + name + "\" has a value, but this load leaves column " + name +
             " to the database's default (the inputs' first lines have no \"" + name +
             "\"): load such lines on their own";
    return false;
  }

  // Fails with a message naming the column.
  bool bad(std::size_t c, std::string_view what, std::string& reason) const {
    reason = "column " + plans[c].spec.name + ": " + std::string(what);
    return false;
  }

  bool range_checked(std::size_t c, std::int64_t v, FieldValue& out, std::string& reason) const {
    const ColumnType t = plans[c].spec.type;
    const IntegerRange r = integer_range(t);
    if (v < r.min || v > r.max) {
      reason = std::to_string(v) + " is out of range for column " + plans[c].spec.name + " (" +
               std::string(to_string(t)) + ": " + std::to_string(r.min) + ".." +
               std::to_string(r.max) + ")";
      return false;
    }
    out.kind = FieldValue::Kind::integer;
    out.i = v;
    return true;
  }

  // A value written as text (CSV fields, defaults, sets, JSON strings for
  // non-text columns).
  bool from_text(std::size_t c, std::string_view s, FieldValue& out, std::string& reason) const {
    const ColumnType t = plans[c].spec.type;
    switch (t) {
      case ColumnType::text:
        out.kind = FieldValue::Kind::text;
        out.text = s;
        return true;
      case ColumnType::boolean:
        if (auto b = parse_bool(s)) {
          out.kind = FieldValue::Kind::boolean;
          out.b = *b;
          return true;
        }
        return bad(c, quoted(s) + " is not a boolean (true/false, 1/0, t/f, yes/no)", reason);
      case ColumnType::float64:
        if (auto d = parse_float(s)) {
          out.kind = FieldValue::Kind::float64;
          out.d = *d;
          return true;
        }
        return bad(c, quoted(s) + " is not a finite number", reason);
      case ColumnType::timestamp:
        if (auto ts = parse_timestamp(s)) {
          out.kind = FieldValue::Kind::time;
          out.ts = *ts;
          return true;
        }
        return bad(c, quoted(s) + " is not a timestamp (ISO 8601 or epoch)", reason);
      default:
        if (auto i = parse_integer(s)) return range_checked(c, *i, out, reason);
        if (auto b = parse_bool(s)) return range_checked(c, *b ? 1 : 0, out, reason);  // as above
        // Digits alone that did not parse are past int64: out of range,
        // not "a fraction" (they parse as a float too).
        if (!s.empty() && s.size() > (s[0] == '-' ? 1u : 0u) &&
            (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) &&
            std::all_of(s.begin() + 1, s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
          return bad(c, quoted(s) + " is out of range (" + std::string(to_string(t)) + ")", reason);
        if (auto d = parse_float(s)) {
          // 1e3 is the integer JSON's 1e3 is: taken where it is exact.
          if (*d != std::trunc(*d))
            return bad(c, quoted(s) + " is not an integer (it has a fraction)", reason);
          if (*d < -9.2e18 || *d > 9.2e18)
            return bad(c, quoted(s) + " is out of range (" + std::string(to_string(t)) + ")",
                       reason);
          return range_checked(c, static_cast<std::int64_t>(*d), out, reason);
        }
        return bad(c, quoted(s) + " is not an integer", reason);
    }
  }

  // A missing field or a null.
  bool missing(std::size_t c, FieldValue& out, std::string& reason, bool csv_text_empty) const {
    const Plan& p = plans[c];
    if (p.spec.nullable) {
      out.kind = FieldValue::Kind::null;
      return true;
    }
    if (p.has_default) {
      out = p.fixed;
      return true;
    }
    // (Not '' for a column whose default is the database's.)
    if (csv_text_empty && p.spec.type == ColumnType::text && !p.spec.filled_by_database) {
      out.kind = FieldValue::Kind::text;
      out.text = {};
      return true;
    }
    reason = "missing field \"" + p.path + "\"";
    if (p.spec.filled_by_database)
      reason += " (the database fills column " + p.spec.name +
                " only in a load that leaves it out of every row, and this load's inputs begin "
                "with the field: load such lines on their own)";
    return false;
  }

  bool json_error(simdjson::error_code e, const RawRecord& r, std::string& reason) const {
    reason = std::string("JSON: ") + simdjson::error_message(e) + " (line " +
             std::to_string(r.line) + ")";
    // What users hit most: ids beyond 64 bits, which simdjson's DOM refuses
    // with the whole line (quoted, they load into a text column).
    if (e == simdjson::NUMBER_ERROR) reason += ": " + std::string(number_error_hint);
    return false;
  }

  // Converts the JSON value `v` for column c.
  bool from_json(std::size_t c, simdjson::dom::element v, FieldValue& out, std::string& reason) {
    using T = simdjson::dom::element_type;
    const ColumnType t = plans[c].spec.type;
    const T type = v.type();
    switch (type) {
      case T::NULL_VALUE:
        return missing(c, out, reason, false);
      case T::STRING: {
        std::string_view s;
        if (v.get_string().get(s)) return bad(c, "unreadable JSON value", reason);
        return from_text(c, s, out, reason);
      }
      case T::BOOL: {
        bool b = false;
        if (v.get_bool().get(b)) return bad(c, "unreadable JSON value", reason);
        if (t == ColumnType::text) {
          out.kind = FieldValue::Kind::text;
          out.text = b ? "true" : "false";
          return true;
        }
        // An integer column takes a boolean as 1 or 0: SQLite (INTEGER) and
        // MySQL (TINYINT) tables read back so, having no boolean type.
        if (is_integer(t) && t != ColumnType::boolean) {
          out.kind = FieldValue::Kind::integer;
          out.i = b ? 1 : 0;
          return true;
        }
        if (t != ColumnType::boolean)
          return bad(c,
                     std::string(b ? "true" : "false") + " is not " +
                         (t == ColumnType::float64     ? "a number"
                          : t == ColumnType::timestamp ? "a timestamp"
                                                       : "an integer"),
                     reason);
        out.kind = FieldValue::Kind::boolean;
        out.b = b;
        return true;
      }
      case T::OBJECT:
      case T::ARRAY:
        if (t == ColumnType::text) {
          // Its JSON text, minified (rare: this allocates).
          std::string& held = composite[c];
          held = simdjson::minify(v);
          out.kind = FieldValue::Kind::text;
          out.text = held;
          return true;
        }
        return bad(c,
                   std::string("a JSON ") + (type == T::OBJECT ? "object" : "array") + " is not " +
                       std::string(to_string(t)),
                   reason);
      case T::INT64: {
        std::int64_t i = 0;
        if (v.get_int64().get(i)) return bad(c, "unreadable JSON value", reason);
        switch (t) {
          case ColumnType::text:
            return number_text(c, i, out);
          case ColumnType::float64:
            out.kind = FieldValue::Kind::float64;
            out.d = static_cast<double>(i);
            return true;
          case ColumnType::timestamp:
            if (auto ts = epoch_integer(i)) {
              out.kind = FieldValue::Kind::time;
              out.ts = *ts;
              return true;
            }
            return bad(c,
                       std::to_string(i) +
                           " is not an epoch in s, ms (13 digits), us (16) or ns (19 digits)",
                       reason);
          case ColumnType::boolean:
            if (i == 0 || i == 1) {
              out.kind = FieldValue::Kind::boolean;
              out.b = i == 1;
              return true;
            }
            return bad(c, std::to_string(i) + " is not a boolean", reason);
          default:
            return range_checked(c, i, out, reason);
        }
      }
      case T::UINT64: {
        std::uint64_t u = 0;
        if (v.get_uint64().get(u)) return bad(c, "unreadable JSON value", reason);
        if (t == ColumnType::text) return number_text(c, u, out);
        if (t == ColumnType::float64) {
          out.kind = FieldValue::Kind::float64;
          out.d = static_cast<double>(u);
          return true;
        }
        return bad(c, std::to_string(u) + " is out of range (" + std::string(to_string(t)) + ")",
                   reason);
      }
      case T::DOUBLE: {
        double d = 0;
        if (v.get_double().get(d)) return bad(c, "unreadable JSON value", reason);
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, d);
        const std::string shown_d(buf, r.ptr);
        switch (t) {
          case ColumnType::text:
            return number_text(c, d, out);
          case ColumnType::float64:
            out.kind = FieldValue::Kind::float64;
            out.d = d;
            return true;
          case ColumnType::timestamp:
            // Read from its shortest decimal form, as a string of those
            // digits would be: that gives back the digits as written for up
            // to 16 significant ones (epoch seconds to the microsecond),
            // where rounding the double to the microsecond took up a digit
            // an ISO time drops. Past 16 the double itself has lost them.
            if (auto ts = epoch_decimal(shown_d); ts || (ts = epoch_seconds(d))) {
              out.kind = FieldValue::Kind::time;
              out.ts = *ts;
              return true;
            }
            return bad(c, shown_d + " is not an epoch timestamp", reason);
          default:
            if (d != std::trunc(d))
              return bad(c, shown_d + " is not an integer (it has a fraction)", reason);
            if (d < -9.2e18 || d > 9.2e18)
              return bad(c, shown_d + " is out of range (" + std::string(to_string(t)) + ")",
                         reason);
            if (t == ColumnType::boolean) {
              if (d == 0 || d == 1) {
                out.kind = FieldValue::Kind::boolean;
                out.b = d == 1;
                return true;
              }
              return bad(c, shown_d + " is not a boolean", reason);
            }
            return range_checked(c, static_cast<std::int64_t>(d), out, reason);
        }
      }
    }
    return bad(c, "unexpected JSON value", reason);
  }

  // A JSON number for a text column: its shortest text, in the column's own buffer.
  template <class N>
  bool number_text(std::size_t c, N n, FieldValue& out) {
    char* buf = number_buf.data() + c * number_text_size;
    const auto r = std::to_chars(buf, buf + number_text_size, n);
    out.kind = FieldValue::Kind::text;
    out.text = std::string_view(buf, static_cast<std::size_t>(r.ptr - buf));
    return true;
  }

  bool walk(simdjson::dom::object obj, int node, std::vector<FieldValue>& values,
            std::string& reason) {
    const PathNode& pn = nodes[static_cast<std::size_t>(node)];
    for (const auto field : obj) {
      const PathNode::Entry* entry = pn.find(field.key);
      if (entry == nullptr) continue;
      if (entry->left_out >= 0) {
        if (field.value.is_null()) continue;
        return left_out(static_cast<std::size_t>(entry->left_out), reason);
      }
      if (entry->child >= 0) {
        // {"user":{"name":"a"},"user":null}: jq's .user.name is null there.
        const auto child = static_cast<std::size_t>(entry->child);
        if (node_seen[child] == generation) {
          reason = "key \"" + std::string(field.key) + "\" " + std::string(repeated_key_rule);
          return false;
        }
        node_seen[child] = generation;
        simdjson::dom::object inner;
        if (field.value.get_object().get(inner)) continue;  // not an object: its leaves are missing
        if (!walk(inner, entry->child, values, reason)) return false;
        continue;
      }
      const auto c = static_cast<std::size_t>(entry->column);
      if (seen[c] == generation) {
        // JSON leaves a repeated name's meaning open (jq takes the last
        // value, a streaming reader the first): an audit row does not guess.
        return bad(c,
                   "its key \"" + std::string(field.key) + "\" " + std::string(repeated_key_rule),
                   reason);
      }
      seen[c] = generation;
      if (!from_json(c, field.value, values[c], reason)) return false;
    }
    return true;
  }

  bool convert_json(const RawRecord& r, std::vector<FieldValue>& values, std::string& reason) {
    std::string_view text = r.text;
    simdjson::dom::element doc;
    // In place: the reader leaves record_padding readable bytes after the text.
    auto err = parser.parse(text.data(), text.size(), false).get(doc);
    if (err == simdjson::UTF8_ERROR) {
      // Repair into the scratch copy: each bad byte may grow to three.
      const std::size_t need = text.size() * 3 + simdjson::SIMDJSON_PADDING;
      if (repair.size() < need) repair.resize(need);
      std::memcpy(repair.data(), text.data(), text.size());
      const std::size_t n = repair_utf8(repair.data(), text.size(), text.size() * 3);
      std::memset(repair.data() + n, ' ', simdjson::SIMDJSON_PADDING);
      ++repaired;
      text = std::string_view(repair.data(), n);
      err = parser.parse(text.data(), n, false).get(doc);
    }
    if (err) return json_error(err, r, reason);
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) {
      reason = "not a JSON object (line " + std::to_string(r.line) + ")";
      return false;
    }
    return walk(obj, 0, values, reason);
  }

  // Splits a CSV/TSV record into fields (quoted ones unquoted into `unquote`).
  void split(std::string_view text, char delim) {
    fields.clear();
    field_quoted.clear();
    if (unquote.size() < text.size()) unquote.resize(text.size());
    char* u = unquote.data();
    std::size_t i = 0;
    const std::size_t n = text.size();
    for (;;) {
      if (i < n && text[i] == '"') {
        // Quoted: up to the closing quote; "" is one quote; what follows the
        // closing quote up to the delimiter is kept as it is (lenient).
        char* begin = u;
        ++i;
        while (i < n) {
          if (text[i] == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              *u++ = '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          *u++ = text[i++];
        }
        while (i < n && text[i] != delim) *u++ = text[i++];
        fields.emplace_back(begin, static_cast<std::size_t>(u - begin));
        field_quoted.push_back(1);
      } else {
        const std::size_t start = i;
        while (i < n && text[i] != delim) ++i;
        fields.push_back(text.substr(start, i - start));
        field_quoted.push_back(0);
      }
      if (i >= n) break;
      ++i;  // the delimiter
    }
  }

  bool convert_csv(const RawRecord& r, std::vector<FieldValue>& values, std::string& reason) {
    split(r.text, delimiter_of(format));
    if (fields.size() != header_fields) {
      reason = std::to_string(fields.size()) + " fields, the header has " +
               std::to_string(header_fields) + " (line " + std::to_string(r.line) + ")";
      return false;
    }
    for (std::size_t k = 0; k < left_out_fields.size(); ++k)
      if (left_out_fields[k] >= 0 && !fields[static_cast<std::size_t>(left_out_fields[k])].empty())
        return left_out(k, reason);
    for (std::size_t c = 0; c < plans.size(); ++c) {
      const Plan& p = plans[c];
      if (p.constant) continue;
      if (p.field < 0) {
        if (!missing(c, values[c], reason, false)) return false;
        continue;
      }
      const auto f = static_cast<std::size_t>(p.field);
      const std::string_view s = fields[f];
      if (s.empty() && (p.spec.type != ColumnType::text || field_quoted[f] == 0)) {
        if (p.spec.type == ColumnType::text && field_quoted[f] != 0) {
          values[c].kind = FieldValue::Kind::text;
          values[c].text = {};
          continue;
        }
        if (!missing(c, values[c], reason, true)) return false;
        continue;
      }
      if (!from_text(c, s, values[c], reason)) return false;
    }
    return true;
  }
};

RowMapper::RowMapper(const std::vector<ColumnSpec>& columns, Format format, MappingOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.format = format;
  m.specs = columns;
  m.left_out_names = std::move(options.left_to_database);
  m.plans.resize(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    m.plans[c].spec = columns[c];
    m.plans[c].path = columns[c].name;
  }
  auto column_of = [&](const std::string& name, const char* what) -> std::size_t {
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (iequal(columns[c].name, name)) return c;
    throw auditpipe::error(std::string("ingest: ") + what + " " + name + ": no column " + name);
  };
  for (const auto& [column, path] : options.maps) m.plans[column_of(column, "--map")].path = path;
  std::string reason;
  for (const auto& [column, value] : options.sets) {
    const std::size_t c = column_of(column, "--set");
    Impl::Plan& p = m.plans[c];
    p.constant = true;
    p.fixed_text = value;
    if (!m.from_text(c, p.fixed_text, p.fixed, reason))
      throw auditpipe::error("ingest: --set " + column + "=" + shown(value) + ": " + reason);
  }
  for (std::size_t c = 0; c < columns.size(); ++c) {
    Impl::Plan& p = m.plans[c];
    if (p.constant || !p.spec.default_value) continue;
    p.has_default = true;
    p.fixed_text = *p.spec.default_value;
    if (!m.from_text(c, p.fixed_text, p.fixed, reason))
      throw auditpipe::error("ingest: the default of column " + p.spec.name + " (" +
                             shown(p.fixed_text) + "): " + reason);
  }
  if (format == Format::jsonl) {
    m.nodes.emplace_back();
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const Impl::Plan& p = m.plans[c];
      if (p.constant) continue;
      int node = 0;
      std::string_view rest = p.path;
      for (;;) {
        const std::size_t dot = rest.find('.');
        const std::string_view key = rest.substr(0, dot);
        const bool leaf = dot == std::string_view::npos;
        auto& entries = m.nodes[static_cast<std::size_t>(node)].entries;
        auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const PathNode::Entry& e) { return e.key == key; });
        if (leaf) {
          if (it != entries.end())
            throw auditpipe::error("ingest: column " + p.spec.name + " reads \"" + p.path +
                                   "\", which another column reads too (or a part of it)");
          entries.push_back({std::string(key), static_cast<int>(c), -1});
          break;
        }
        if (it == entries.end()) {
          const int child = static_cast<int>(m.nodes.size());
          entries.push_back({std::string(key), -1, child});
          m.nodes.emplace_back();
          node = child;
        } else if (it->child < 0) {
          throw auditpipe::error("ingest: column " + p.spec.name + " reads \"" + p.path +
                                 "\", inside a field another column reads whole");
        } else {
          node = it->child;
        }
        rest = rest.substr(dot + 1);
      }
    }
    // A field no column reads (another column may read it by --map).
    for (std::size_t k = 0; k < m.left_out_names.size(); ++k)
      if (m.nodes[0].find(m.left_out_names[k]) == nullptr)
        m.nodes[0].entries.push_back({m.left_out_names[k], -1, -1, static_cast<int>(k)});
  }
  m.seen.assign(columns.size(), 0);
  m.node_seen.assign(m.nodes.size(), 0);
  values_.resize(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c)
    if (m.plans[c].constant) values_[c] = m.plans[c].fixed;
  // Room for a typical line up front, so steady state does not allocate.
  // The parser's document grows to the longest line parsed so far: parse a
  // 64 KiB document once, so steady state never reallocates it.
  {
    std::string warm(64 * 1024 + simdjson::SIMDJSON_PADDING, ' ');
    warm[0] = '{';
    warm[1] = '}';
    simdjson::dom::element ignored;
    if (m.parser.parse(warm.data(), 64 * 1024, false).get(ignored))
      throw auditpipe::error("ingest: cannot allocate the JSON parser");
  }
  m.composite.resize(columns.size());
  m.number_buf.resize(columns.size() * Impl::number_text_size);
  m.fields.reserve(64);
  m.field_quoted.reserve(64);
}

RowMapper::~RowMapper() = default;

std::vector<std::string> RowMapper::unread_columns() const {
  std::vector<std::string> unread;
  if (impl_->format == Format::jsonl || !impl_->header_set) return unread;
  for (const Impl::Plan& p : impl_->plans) {
    if (p.constant || p.field >= 0) continue;
    unread.push_back(p.path == p.spec.name ? p.spec.name
                                           : p.spec.name + " (reads \"" + p.path + "\")");
  }
  return unread;
}

bool RowMapper::needs_header() const noexcept {
  return impl_->format != Format::jsonl && !impl_->header_set;
}

std::vector<std::string> RowMapper::header_names(const RawRecord& header, Format format) {
  Impl m;
  std::string_view text = header.text;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  m.split(text, delimiter_of(format));
  return {m.fields.begin(), m.fields.end()};
}

void RowMapper::set_header(const RawRecord& header) {
  Impl& m = *impl_;
  std::string_view text = header.text;
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  m.split(text, delimiter_of(m.format));
  std::vector<std::string> names(m.fields.begin(), m.fields.end());
  m.header_fields = names.size();
  for (std::size_t c = 0; c < m.plans.size(); ++c) {
    Impl::Plan& p = m.plans[c];
    p.field = -1;
    if (p.constant) continue;
    int exact = -1, loose = -1, count = 0, loose_count = 0;
    std::string loose_names;
    for (std::size_t f = 0; f < names.size(); ++f) {
      if (names[f] == p.path) {
        if (exact < 0) exact = static_cast<int>(f);
        ++count;
      } else if (iequal(names[f], p.path)) {
        if (loose < 0) loose = static_cast<int>(f);
        ++loose_count;
        loose_names += (loose_names.empty() ? "" : ", ") + names[f];
      }
    }
    if (count > 1)
      throw auditpipe::error("ingest: the header names \"" + p.path + "\" " +
                             std::to_string(count) + " times (column " + p.spec.name + ")");
    // Matched only ignoring case, by more than one field (Note, NOTE): the
    // first was read without a word.
    if (exact < 0 && loose_count > 1)
      throw auditpipe::error("ingest: the header names \"" + p.path + "\" " +
                             std::to_string(loose_count) + " times in other cases (" + loose_names +
                             "; column " + p.spec.name + ")");
    p.field = exact >= 0 ? exact : loose;
    // A path written for JSON inputs (user.name) that no header names: the
    // column's own name, so that one schema file serves both formats.
    if (p.field < 0 && p.path != p.spec.name)
      for (std::size_t f = 0; f < names.size() && p.field < 0; ++f)
        if (iequal(names[f], p.spec.name)) p.field = static_cast<int>(f);
    if (p.field < 0 && !p.spec.nullable && !p.has_default)
      throw auditpipe::error(
          "ingest: no header field \"" + p.path + "\" for column " + p.spec.name +
          (p.spec.filled_by_database
               ? ", whose default is the database's: this load reads the column from its inputs "
                 "because another input begins with the field (load this file on its own)"
               : ", which has no default and is not nullable (--map " + p.spec.name +
                     "=FIELD or --set " + p.spec.name + "=VALUE)"));
  }
  m.left_out_fields.assign(m.left_out_names.size(), -1);
  for (std::size_t k = 0; k < m.left_out_names.size(); ++k) {
    for (std::size_t f = 0; f < names.size(); ++f) {
      const bool read = std::any_of(m.plans.begin(), m.plans.end(), [&](const Impl::Plan& p) {
        return p.field == static_cast<int>(f);
      });
      if (!read && iequal(names[f], m.left_out_names[k]))
        m.left_out_fields[k] = static_cast<int>(f);
    }
  }
  m.header_set = true;
}

bool RowMapper::convert(const RawRecord& record, std::string& reason) {
  Impl& m = *impl_;
  if (m.format == Format::jsonl) {
    if (++m.generation == 0) {
      std::fill(m.seen.begin(), m.seen.end(), 0);
      std::fill(m.node_seen.begin(), m.node_seen.end(), 0);
      m.generation = 1;
    }
    if (!m.convert_json(record, values_, reason)) return false;
    for (std::size_t c = 0; c < m.plans.size(); ++c) {
      const Impl::Plan& p = m.plans[c];
      if (p.constant || m.seen[c] == m.generation) continue;
      if (!m.missing(c, values_[c], reason, false)) return false;
    }
    return true;
  }
  if (!m.header_set) {
    reason = "no header yet";
    return false;
  }
  return m.convert_csv(record, values_, reason);
}

void RowMapper::out_of_range(std::size_t column, std::int64_t value, std::string& reason) const {
  const auto& p = impl_->plans[column];
  reason = std::to_string(value) + " is out of range for column " + p.spec.name + " (" +
           std::string(to_string(p.spec.type)) + ")";
}

std::uint64_t RowMapper::repaired_lines() const noexcept {
  return impl_->repaired;
}

const std::vector<ColumnSpec>& RowMapper::columns() const noexcept {
  return impl_->specs;
}

}  // namespace auditpipe::ingest
