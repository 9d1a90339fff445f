// The statement pieces of a table in a dialect (auditpipe/sink/sql_dialect.h).
// Called by the SQL sink skeleton at open(); the sinks' write paths read
// the result.
#include "auditpipe/sink/sql_dialect.h"

#include <optional>
#include <vector>

namespace auditpipe {

std::string SqlDialect::quote(std::string_view identifier) const {
  std::string out(1, identifier_quote);
  for (char ch : identifier) {
    if (ch == identifier_quote) out += ch;
    out += ch;
  }
  out += identifier_quote;
  return out;
}

namespace {

std::string_view entry(const SqlColumnTypes& t, ColumnType type) {
  switch (type) {
    case ColumnType::boolean:
      return t.boolean;
    case ColumnType::int8:
      return t.int8;
    case ColumnType::int16:
      return t.int16;
    case ColumnType::int32:
      return t.int32;
    case ColumnType::int64:
      return t.int64;
    case ColumnType::uint8:
      return t.uint8;
    case ColumnType::uint16:
      return t.uint16;
    case ColumnType::uint32:
      return t.uint32;
    case ColumnType::float64:
      return t.float64;
    case ColumnType::timestamp:
      return t.timestamp;
    case ColumnType::text:
      break;
  }
  return t.text;
}

}  // namespace

std::string SqlDialect::column_type(const Column& column) const {
  if (column.type == ColumnType::text && text_type != nullptr)
    return text_type(column.max_length, column.max_chars);
  return std::string(entry(column_types, column.type));
}

std::string_view SqlDialect::accepted_types_of(const Column& column) const {
  return entry(accepted_types, column.type);
}

std::string SqlDialect::table_columns_query() const {
  if (!columns_query.empty()) return std::string(columns_query);
  return "SELECT lower(column_name), coalesce(character_maximum_length, 0), lower(data_type), "
         "data_type, CASE WHEN is_nullable = 'YES' THEN '1' ELSE '0' END, CASE WHEN is_nullable "
         "= 'NO' AND column_default IS NULL THEN '1' ELSE '0' END FROM "
         "information_schema.columns WHERE table_schema = " +
         std::string(current_schema) + " AND table_name = " + std::string(catalog_parameter);
}

std::string SqlDialect::add_column(std::string_view table, const Column& column) const {
  // Nullable whatever the member: rows already in the table never had the
  // value, and NULL says so where a DEFAULT of '' or 0 would make one up.
  return "ALTER TABLE " + quote(table) + " ADD COLUMN " + quote(column.name) + " " +
         column_type(column);
}

std::string SqlTableText::single_row_insert() const {
  std::string sql = insert_head + "(";
  for (std::size_t i = 0; i < column_count; ++i) sql += i ? ",?" : "?";
  return sql + ")" + insert_tail;
}

std::vector<std::size_t> sql_placeholders(std::string_view sql, bool mysql_lexing) {
  std::vector<std::size_t> out;
  const std::size_t n = sql.size();
  // The end of a quoted run starting at `i` (the quote), its quote doubled
  // inside, backslashes escaping with `backslash`.
  auto skip_quoted = [&](std::size_t i, char quote, bool backslash) {
    for (++i; i < n; ++i) {
      if (backslash && sql[i] == '\\') {
        ++i;
      } else if (sql[i] == quote) {
        if (i + 1 < n && sql[i + 1] == quote) {
          ++i;
        } else {
          return i + 1;
        }
      }
    }
    return n;
  };
  auto is_word = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
  };
  std::size_t i = 0;
  while (i < n) {
    const char ch = sql[i];
    if (ch == '?') {
      out.push_back(i++);
    } else if (ch == '\'') {
      // E'...' (PostgreSQL's escape strings) takes backslash escapes.
      const bool escape = mysql_lexing || (i > 0 && (sql[i - 1] == 'E' || sql[i - 1] == 'e') &&
                                           (i < 2 || !is_word(sql[i - 2])));
      i = skip_quoted(i, '\'', escape);
    } else if (ch == '"') {
      i = skip_quoted(i, '"', mysql_lexing);
    } else if (ch == '`' && mysql_lexing) {
      i = skip_quoted(i, '`', false);
    } else if ((ch == '-' && i + 1 < n && sql[i + 1] == '-') || (ch == '#' && mysql_lexing)) {
      const std::size_t eol = sql.find('\n', i);
      i = eol == std::string_view::npos ? n : eol + 1;
    } else if (ch == '/' && i + 1 < n && sql[i + 1] == '*') {
      const std::size_t end = sql.find("*/", i + 2);
      i = end == std::string_view::npos ? n : end + 2;
    } else if (ch == '$' && !mysql_lexing && (i == 0 || !is_word(sql[i - 1]))) {
      // $tag$ ... $tag$ (a dollar-quoted string), but not $1.
      std::size_t j = i + 1;
      while (j < n && is_word(sql[j]) && !(sql[j] >= '0' && sql[j] <= '9' && j == i + 1)) ++j;
      if (j < n && sql[j] == '$') {
        const std::string_view tag = sql.substr(i, j - i + 1);
        const std::size_t end = sql.find(tag, j + 1);
        i = end == std::string_view::npos ? n : end + tag.size();
      } else {
        ++i;
      }
    } else {
      ++i;
    }
  }
  return out;
}

std::optional<std::string> sql_literal_value(std::string_view e, bool backslash_escapes) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
      s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
      s.remove_suffix(1);
    return s;
  };
  e = trim(e);
  // PostgreSQL's casts, outermost last: 'x'::character varying,
  // '2024-01-01'::timestamp with time zone, NULL::text. A cast's type has no
  // quote, so the last "::" outside quotes ends the literal.
  if (const std::size_t cast = e.rfind("::");
      cast != std::string_view::npos && e.find('\'', cast) == std::string_view::npos) {
    return sql_literal_value(e.substr(0, cast), backslash_escapes);
  }
  while (e.size() >= 2 && e.front() == '(' && e.back() == ')') e = trim(e.substr(1, e.size() - 2));
  if (e.empty()) return std::nullopt;
  if (e.front() == '\'') {
    std::string value;
    std::size_t i = 1;
    for (; i < e.size(); ++i) {
      if (backslash_escapes && e[i] == '\\' && i + 1 < e.size()) {
        const char next = e[++i];
        value += next == 'n'   ? '\n'
                 : next == 't' ? '\t'
                 : next == 'r' ? '\r'
                 : next == '0' ? '\0'
                               : next;
      } else if (e[i] == '\'') {
        if (i + 1 < e.size() && e[i + 1] == '\'') {
          value += '\'';
          ++i;
        } else {
          break;
        }
      } else {
        value += e[i];
      }
    }
    // Exactly one quoted string: 'a' || 'b' is an expression.
    if (i + 1 != e.size()) return std::nullopt;
    return value;
  }
  std::string word(e);
  for (char& ch : word) {
    if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
  }
  if (word == "TRUE" || word == "FALSE") return std::string(e);
  // A number: [+-]digits[.digits][e[+-]digits], or .digits.
  std::size_t i = 0;
  if (e[i] == '+' || e[i] == '-') ++i;
  std::size_t digits = 0;
  while (i < e.size() && e[i] >= '0' && e[i] <= '9') ++i, ++digits;
  if (i < e.size() && e[i] == '.') {
    ++i;
    while (i < e.size() && e[i] >= '0' && e[i] <= '9') ++i, ++digits;
  }
  if (digits > 0 && i < e.size() && (e[i] == 'e' || e[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < e.size() && (e[j] == '+' || e[j] == '-')) ++j;
    const std::size_t start = j;
    while (j < e.size() && e[j] >= '0' && e[j] <= '9') ++j;
    if (j > start) i = j;
  }
  if (digits > 0 && i == e.size()) return std::string(e);
  return std::nullopt;  // NULL, now(), nextval('s'::regclass), CURRENT_TIMESTAMP, ...
}

bool sql_default_is_computed(std::string_view e, bool backslash_escapes) {
  if (sql_literal_value(e, backslash_escapes)) return false;
  // NULL as PostgreSQL and MariaDB report it: NULL, NULL::text, (NULL).
  if (const std::size_t cast = e.find("::"); cast != std::string_view::npos) e = e.substr(0, cast);
  std::string word;
  for (char ch : e) {
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '(' || ch == ')') continue;
    word += static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  }
  return word != "NULL";
}

SqlTableText sql_table_text(const SqlDialect& d, const TableDescriptor& table) {
  const std::string source_id = d.quote(source_id_column), seq = d.quote(seq_column);
  SqlTableText t;
  t.table = d.quote(table.name);
  for (const Column& c : table.columns) t.columns += d.quote(c.name) + ",";
  t.columns += source_id + "," + seq;
  t.column_count = table.columns.size() + 2;
  t.insert_head = "INSERT INTO " + t.table + " (" + t.columns + ") VALUES ";
  switch (d.idempotent_insert) {
    case SqlDialect::IdempotentInsert::on_duplicate_key_update:
      t.insert_tail = " ON DUPLICATE KEY UPDATE " + seq + " = " + seq;
      break;
    case SqlDialect::IdempotentInsert::on_conflict_do_nothing:
      t.insert_tail = " ON CONFLICT (" + source_id + ", " + seq + ") DO NOTHING";
      break;
  }
  t.create_table = "CREATE TABLE IF NOT EXISTS " + t.table + " (";
  for (const Column& c : table.columns) {
    // A nullable member's column takes NULL; every other refuses it, so a
    // value the record always has is never missing from a row.
    t.create_table +=
        d.quote(c.name) + " " + d.column_type(c) + (c.nullable ? ", " : " NOT NULL, ");
  }
  const std::string key_type(d.key_column_type);
  t.create_table += source_id + " " + key_type + " NOT NULL, " + seq + " " + key_type +
                    " NOT NULL, " + std::string(d.key_constraint) + " (" + source_id + ", " + seq +
                    "))" + std::string(d.table_options);
  return t;
}

}  // namespace auditpipe
