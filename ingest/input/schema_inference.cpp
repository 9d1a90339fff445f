// infer_columns(): statistics per input field over the samples, then one
// column per field; see schema_inference.h.
#include "input/schema_inference.h"

#include <simdjson.h>

#include <algorithm>
#include <unordered_map>

#include "auditpipe/status.h"
#include "input/value_parse.h"

namespace auditpipe::ingest {
namespace {

constexpr std::size_t max_identifier = 64;

// What the samples showed of one field.
struct FieldStats {
  std::string path;         // JSON dotted path or CSV header name
  std::size_t present = 0;  // samples with a non-null, non-empty value
  std::size_t ints = 0, floats = 0, bools = 0, strings = 0, timestamps = 0, others = 0;
  std::size_t longest = 0;
  std::string beyond_int64;  // the first integer above int64's range (made the column text)
};

class Collector {
 public:
  FieldStats& field(const std::string& path) {
    auto it = index_.find(path);
    if (it != index_.end()) return fields_[it->second];
    index_.emplace(path, fields_.size());
    FieldStats f;
    f.path = path;
    fields_.push_back(std::move(f));
    return fields_.back();
  }
  std::vector<FieldStats>& fields() { return fields_; }

 private:
  std::vector<FieldStats> fields_;
  std::unordered_map<std::string, std::size_t> index_;
};

void collect_json(simdjson::dom::object obj, const std::string& prefix, Collector& out) {
  using T = simdjson::dom::element_type;
  for (const auto kv : obj) {
    std::string path = prefix.empty() ? std::string(kv.key) : prefix + "." + std::string(kv.key);
    const T t = kv.value.type();
    if (t == T::OBJECT) {
      simdjson::dom::object inner;
      if (!kv.value.get_object().get(inner)) collect_json(inner, path, out);
      continue;
    }
    FieldStats& f = out.field(path);
    switch (t) {
      case T::NULL_VALUE:
        continue;
      case T::INT64:
        ++f.ints;
        break;
      case T::UINT64:
        ++f.others;  // beyond int64: text
        if (f.beyond_int64.empty()) f.beyond_int64 = std::to_string(kv.value.get_uint64().value());
        break;
      case T::DOUBLE:
        ++f.floats;
        break;
      case T::BOOL:
        ++f.bools;
        break;
      case T::STRING: {
        std::string_view s;
        if (kv.value.get_string().get(s)) break;
        ++f.strings;
        if (parse_iso8601(s)) ++f.timestamps;
        f.longest = std::max(f.longest, s.size());
        break;
      }
      default:
        ++f.others;
        break;
    }
    if (t != T::STRING) f.longest = std::max(f.longest, simdjson::minify(kv.value).size());
    ++f.present;
  }
}

void split_fields(std::string_view text, char delim, std::vector<std::string>& out) {
  out.clear();
  std::size_t i = 0;
  for (;;) {
    std::string field;
    if (i < text.size() && text[i] == '"') {
      ++i;
      while (i < text.size()) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
    }
    while (i < text.size() && text[i] != delim) field += text[i++];
    out.push_back(std::move(field));
    if (i >= text.size()) break;
    ++i;
  }
}

bool is_bool_word(std::string_view s) {
  std::string l(s);
  for (char& c : l)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return l == "true" || l == "false";
}

std::uint32_t text_size(std::size_t longest) {
  std::size_t size = 16;
  while (size < 2 * longest && size < 65536) size *= 2;
  return static_cast<std::uint32_t>(size);
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto l = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
           return l(x) == l(y);
         });
}

InferredColumns finish(std::vector<FieldStats>& fields, std::size_t samples) {
  InferredColumns out;
  std::vector<std::string> taken = {"source_id", "seq"};
  // A field that held only null where other lines hold an object there
  // ("user": null, "user": {"name": ...}): its column would read what the
  // object's columns read (a load refuses that); the object's columns,
  // nullable, say it all.
  const auto null_parent = [&](const FieldStats& f) {
    if (f.present > 0) return false;
    const std::string inside = f.path + ".";
    return std::any_of(fields.begin(), fields.end(),
                       [&](const FieldStats& g) { return g.path.rfind(inside, 0) == 0; });
  };
  for (const FieldStats& f : fields) {
    if (null_parent(f)) continue;
    std::string flat = f.path;
    std::replace(flat.begin(), flat.end(), '.', '_');
    std::string base = sanitize_identifier(flat);
    std::string name = base;
    for (int n = 2; std::any_of(taken.begin(), taken.end(),
                                [&](const std::string& t) { return iequal(t, name); });
         ++n) {
      const std::string suffix = "_" + std::to_string(n);
      name = base.substr(0, max_identifier - suffix.size()) + suffix;
    }
    taken.push_back(name);
    ColumnSpec c;
    c.name = name;
    c.nullable = f.present < samples;
    const std::size_t numbers = f.ints + f.floats;
    if (f.present == 0 || f.others > 0) {
      c.type = ColumnType::text;
    } else if (f.ints == f.present) {
      c.type = ColumnType::int64;
    } else if (numbers == f.present) {
      c.type = ColumnType::float64;
    } else if (f.bools == f.present) {
      c.type = ColumnType::boolean;
    } else if (f.strings == f.present && f.timestamps == f.present) {
      c.type = ColumnType::timestamp;
    } else {
      c.type = ColumnType::text;
    }
    if (c.type == ColumnType::text) c.max_length = text_size(f.longest);
    if (!f.beyond_int64.empty())
      out.notes.push_back(name + " is text: it holds an integer beyond int64 (" + f.beyond_int64 +
                          "), which no integer column takes");
    if (name != f.path) out.paths.emplace_back(name, f.path);
    out.columns.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string sanitize_identifier(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out.insert(out.begin(), '_');
  if (out.size() > max_identifier) out.resize(max_identifier);
  return out;
}

InferredColumns infer_columns(const std::vector<std::string>& records, Format format,
                              std::size_t max_records) {
  Collector stats;
  std::size_t samples = 0, unparsed = 0;
  std::size_t first_unparsed_record = 0;
  std::string first_unparsed_reason;
  // `number`: 1-based among the records looked at (a CSV header not counted).
  const auto left_out = [&](std::size_t number, std::string why) {
    if (unparsed++ == 0) {
      first_unparsed_record = number;
      first_unparsed_reason = std::move(why);
    }
  };
  if (format == Format::jsonl) {
    simdjson::dom::parser parser;
    for (std::size_t i = 0; i < records.size() && samples < max_records; ++i) {
      simdjson::dom::element doc;
      simdjson::dom::object obj;
      if (const auto e = parser.parse(records[i]).get(doc); e) {
        left_out(i + 1, std::string("not JSON: ") + simdjson::error_message(e) +
                            (e == simdjson::NUMBER_ERROR ? ": " + std::string(number_error_hint)
                                                         : std::string()));
        continue;
      }
      if (doc.get_object().get(obj)) {
        left_out(i + 1, "not a JSON object");
        continue;
      }
      ++samples;
      collect_json(obj, "", stats);
    }
  } else {
    if (records.empty()) throw auditpipe::error("ingest: no header to infer columns from");
    const char delim = delimiter_of(format);
    std::vector<std::string> header, fields;
    split_fields(records[0], delim, header);
    if (!header.empty() && header[0].rfind("\xEF\xBB\xBF", 0) == 0) header[0].erase(0, 3);
    for (std::size_t k = 0; k < header.size(); ++k) {
      // Two fields of one name: no load can tell them apart (RowMapper
      // refuses such a header), and one column would stand for both.
      if (std::find(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(k), header[k]) !=
          header.begin() + static_cast<std::ptrdiff_t>(k))
        throw auditpipe::error("ingest: the header names \"" + header[k] +
                               "\" more than once: rename one of them (a load could not tell "
                               "them apart)");
      stats.field(header[k]);
    }
    for (std::size_t i = 1; i < records.size() && samples < max_records; ++i) {
      split_fields(records[i], delim, fields);
      if (fields.size() != header.size()) {
        left_out(i, std::to_string(fields.size()) + " fields where the header names " +
                        std::to_string(header.size()));
        continue;
      }
      ++samples;
      for (std::size_t k = 0; k < fields.size(); ++k) {
        FieldStats& f = stats.fields()[k];
        const std::string& v = fields[k];
        if (v.empty()) continue;
        ++f.present;
        f.longest = std::max(f.longest, v.size());
        if (parse_integer(v))
          ++f.ints;
        else if (parse_float(v))
          ++f.floats;
        else if (is_bool_word(v))
          ++f.bools;
        else {
          ++f.strings;
          if (parse_iso8601(v)) ++f.timestamps;
        }
      }
    }
  }
  if (samples == 0)
    throw auditpipe::error("ingest: none of the " + std::to_string(records.size()) +
                           " sampled records could be used to infer columns");
  InferredColumns out = finish(stats.fields(), samples);
  out.unparsed = unparsed;
  out.first_unparsed_record = first_unparsed_record;
  out.first_unparsed_reason = std::move(first_unparsed_reason);
  return out;
}

}  // namespace auditpipe::ingest
