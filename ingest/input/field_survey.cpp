// surveyed_fields(): see field_survey.h.
#include "input/field_survey.h"

#include <simdjson.h>

#include "input/byte_source.h"
#include "input/record_reader.h"
#include "input/row_mapper.h"

namespace auditpipe::ingest {

std::set<std::string> surveyed_fields(std::string_view prefix, Format format,
                                      std::size_t max_record_bytes) {
  std::set<std::string> names;
  auto source = memory_byte_source(prefix, "(first bytes)");
  RecordReader reader(*source, format, max_record_bytes);
  RawRecord raw;
  simdjson::dom::parser parser;
  // An incomplete record is the prefix's cut-off end (returned again on
  // every call): the survey stops there.
  while (reader.next(raw) && raw.kind != RawRecord::Kind::incomplete) {
    if (raw.kind != RawRecord::Kind::record) continue;
    if (format != Format::jsonl) {
      for (std::string& name : RowMapper::header_names(raw, format)) names.insert(std::move(name));
      break;  // the header
    }
    simdjson::dom::object obj;
    // The reader leaves record padding after the text, as RowMapper relies on.
    if (parser.parse(raw.text.data(), raw.text.size(), false).get(obj)) continue;
    for (const auto field : obj)
      if (!field.value.is_null()) names.emplace(field.key);
  }
  return names;
}

}  // namespace auditpipe::ingest
