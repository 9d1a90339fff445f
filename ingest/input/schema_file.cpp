// Reading (simdjson DOM) and writing schema files; see schema_file.h.
#include "input/schema_file.h"

#include <simdjson.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "auditpipe/detail/shown_name.h"
#include "auditpipe/status.h"

namespace auditpipe::ingest {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw auditpipe::error("schema file " + origin + ": " + what);
}

std::string column_label(std::size_t index, const std::string& name) {
  std::string s = "column " + std::to_string(index + 1);
  if (!name.empty()) s += " (" + auditpipe::detail::shown_name(name) + ")";
  return s;
}

bool type_from_name(std::string_view name, ColumnType& out) {
  for (int t = 0; t <= static_cast<int>(ColumnType::text); ++t) {
    if (to_string(static_cast<ColumnType>(t)) == name) {
      out = static_cast<ColumnType>(t);
      return true;
    }
  }
  return false;
}

std::string type_names() {
  std::string s;
  for (int t = 0; t <= static_cast<int>(ColumnType::text); ++t) {
    if (!s.empty()) s += ", ";
    s += to_string(static_cast<ColumnType>(t));
  }
  return s;
}

void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          static constexpr char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

SchemaFile parse_schema_json(std::string_view json, const std::string& origin) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto e = parser.parse(json.data(), json.size(), true).get(root))
    fail(origin, std::string("not valid JSON: ") + simdjson::error_message(e));
  simdjson::dom::object top;
  if (root.get_object().get(top)) fail(origin, "not a JSON object");
  SchemaFile out;
  bool have_table = false, have_columns = false;
  for (const auto kv : top) {
    if (kv.key == "table") {
      std::string_view t;
      if (kv.value.get_string().get(t)) fail(origin, "\"table\" is not a string");
      out.table = std::string(t);
      have_table = true;
    } else if (kv.key == "columns") {
      simdjson::dom::array cols;
      if (kv.value.get_array().get(cols)) fail(origin, "\"columns\" is not an array");
      have_columns = true;
      std::size_t index = 0;
      for (const auto col : cols) {
        simdjson::dom::object o;
        if (col.get_object().get(o)) fail(origin, column_label(index, "") + " is not an object");
        ColumnSpec spec;
        std::string name;
        if (std::string_view n; o["name"].get_string().get(n) == simdjson::SUCCESS)
          name = std::string(n);
        const std::string label = column_label(index, name);
        bool have_name = false, have_type = false, have_size = false, have_chars = false;
        std::uint64_t size = 0, chars = 0;
        for (const auto f : o) {
          if (f.key == "name") {
            std::string_view n;
            if (f.value.get_string().get(n)) fail(origin, label + ": \"name\" is not a string");
            spec.name = std::string(n);
            have_name = true;
          } else if (f.key == "type") {
            std::string_view t;
            if (f.value.get_string().get(t)) fail(origin, label + ": \"type\" is not a string");
            if (!type_from_name(t, spec.type))
              fail(origin, label + ": unknown type \"" + auditpipe::detail::shown_name(t) +
                               "\" (one of " + type_names() + ")");
            have_type = true;
          } else if (f.key == "size") {
            if (f.value.get_uint64().get(size) || size == 0 || size > 16u * 1024 * 1024)
              fail(origin, label + ": \"size\" is not a byte count from 1 to 16777216");
            have_size = true;
          } else if (f.key == "chars") {
            if (f.value.get_uint64().get(chars) || chars == 0 || chars > 16u * 1024 * 1024)
              fail(origin, label + ": \"chars\" is not a character count from 1 to 16777216");
            have_chars = true;
          } else if (f.key == "nullable") {
            if (f.value.get_bool().get(spec.nullable))
              fail(origin, label + ": \"nullable\" is not true or false");
          } else if (f.key == "default") {
            const auto t = f.value.type();
            using T = simdjson::dom::element_type;
            if (t == T::NULL_VALUE) {
              spec.default_value.reset();
            } else if (t == T::STRING) {
              std::string_view d;
              if (f.value.get_string().get(d)) fail(origin, label + ": unreadable \"default\"");
              spec.default_value = std::string(d);
            } else if (t == T::OBJECT || t == T::ARRAY) {
              fail(origin, label + ": \"default\" is not a string, number or boolean");
            } else {
              spec.default_value = simdjson::minify(f.value);
            }
          } else if (f.key == "path") {
            std::string_view p;
            if (f.value.get_string().get(p) || p.empty())
              fail(origin, label + ": \"path\" is not a non-empty string");
            out.paths.emplace_back(name, std::string(p));
          } else {
            fail(origin, label + ": unknown key \"" + auditpipe::detail::shown_name(f.key) +
                             "\" (name, type, size, chars, nullable, default, path)");
          }
        }
        if (!have_name) fail(origin, label + ": no \"name\"");
        if (!have_type) fail(origin, label + ": no \"type\"");
        if (spec.type == ColumnType::text) {
          if (!have_size) fail(origin, label + ": a text column needs a \"size\" (bytes)");
          spec.max_length = static_cast<std::uint32_t>(size);
          if (have_chars) {
            if (chars > size)
              fail(origin, label + ": \"chars\" (" + std::to_string(chars) +
                               ") is more than \"size\" (" + std::to_string(size) + " bytes)");
            spec.max_chars = static_cast<std::uint32_t>(chars);
          }
        } else if (have_size || have_chars) {
          fail(origin, label + ": \"" + (have_size ? "size" : "chars") +
                           "\" is for text columns only, this one is " +
                           std::string(to_string(spec.type)));
        }
        out.columns.push_back(std::move(spec));
        ++index;
      }
    } else {
      fail(origin,
           "unknown key \"" + auditpipe::detail::shown_name(kv.key) + "\" (table, columns)");
    }
  }
  if (!have_table) fail(origin, "no \"table\"");
  if (!have_columns) fail(origin, "no \"columns\"");
  return out;
}

SchemaFile read_schema_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(path, std::string("cannot read: ") + std::strerror(errno));
  return parse_schema_json(text.str(), path);
}

std::string to_schema_json(std::string_view table, const std::vector<ColumnSpec>& columns,
                           const std::vector<std::pair<std::string, std::string>>& paths) {
  std::string out = "{\n  \"table\": ";
  json_string(out, table);
  out += ",\n  \"columns\": [\n";
  for (std::size_t i = 0; i < columns.size(); ++i) {
    const ColumnSpec& c = columns[i];
    out += "    {\"name\": ";
    json_string(out, c.name);
    out += ", \"type\": ";
    json_string(out, to_string(c.type));
    if (c.type == ColumnType::text) out += ", \"size\": " + std::to_string(c.max_length);
    if (c.max_chars != 0) out += ", \"chars\": " + std::to_string(c.max_chars);
    if (c.nullable) out += ", \"nullable\": true";
    if (c.default_value) {
      out += ", \"default\": ";
      json_string(out, *c.default_value);
    }
    for (const auto& [column, path] : paths) {
      if (column == c.name) {
        out += ", \"path\": ";
        json_string(out, path);
        break;
      }
    }
    out += i + 1 < columns.size() ? "},\n" : "}\n";
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace auditpipe::ingest
