// RecordReader's framing: one buffer, refilled from the source, scanned for
// the end of the current record (a newline, outside quotes for CSV/TSV).
#include "input/record_reader.h"

#include <algorithm>
#include <cstring>

#include "auditpipe/status.h"

namespace auditpipe::ingest {
namespace {

// Where a CSV/TSV scan stands inside the current record.
enum class Csv : std::uint8_t { field_start, unquoted, quoted, quote_in_quoted };

// The first bytes of a too-long record kept for its report.
constexpr std::size_t too_long_prefix = 4096;

bool blank(std::string_view s) noexcept {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

}  // namespace

struct RecordReader::State {
  ByteSource& source;
  Format format;
  char delim;
  std::size_t max;
  std::size_t chunk;
  std::size_t cap;  // usable bytes (the padding lies beyond)
  std::unique_ptr<char[]> buf;
  std::unique_ptr<char[]> prefix;  // too_long: the record's first bytes
  std::size_t prefix_size = 0;
  std::uint64_t base;  // stream offset of buf[0]
  std::size_t start = 0, end = 0, scan = 0;
  Csv csv = Csv::field_start;
  std::uint64_t newlines = 0;    // inside quotes, in the current record
  bool eof_in_quotes = false;    // the last record returned ended at the stream's end in quotes
  bool stray_in_record = false;  // the current record: see RecordReader::stray_quote()
  bool stray_quote = false;      // the last record returned: the same
  std::uint64_t line;
  bool bom_pending;
  bool skipping = false;  // inside a too-long record
  std::uint64_t skip_offset = 0;
  std::uint64_t skip_line = 0;

  State(ByteSource& src, Format f, std::size_t max_bytes, std::uint64_t first_line,
        std::size_t chunk_bytes)
      : source(src),
        format(f),
        delim(delimiter_of(f)),
        max(std::max<std::size_t>(max_bytes, 1)),
        chunk(std::max<std::size_t>(chunk_bytes, 1)),
        cap(max + chunk + 1),
        buf(new char[cap + record_padding]),
        prefix(new char[std::min(max, too_long_prefix) + record_padding]),
        base(src.position()),
        line(first_line),
        bom_pending(src.position() == 0) {
    std::memset(buf.get(), 0, cap + record_padding);
    std::memset(prefix.get(), 0, std::min(max, too_long_prefix) + record_padding);
  }

  // Reads one more chunk after `end`; false if the source has nothing now.
  bool refill() {
    if (cap - end < chunk) {
      std::memmove(buf.get(), buf.get() + start, end - start);
      base += start;
      scan -= start;
      end -= start;
      start = 0;
    }
    const std::size_t k = source.read(buf.get() + end, std::min(chunk, cap - end));
    end += k;
    return k != 0;
  }

  // Scans [scan, end) for the current record's end; its newline's index, or npos.
  std::size_t find_end() {
    const char* b = buf.get();
    if (format == Format::jsonl) {
      const void* p = std::memchr(b + scan, '\n', end - scan);
      if (p == nullptr) {
        scan = end;
        return std::string_view::npos;
      }
      return static_cast<std::size_t>(static_cast<const char*>(p) - b);
    }
    for (std::size_t i = scan; i < end; ++i) {
      const char c = b[i];
      switch (csv) {
        case Csv::field_start:
          if (c == '"')
            csv = Csv::quoted;
          else if (c == '\n')
            return done(i);
          else if (c != delim)
            csv = Csv::unquoted;
          break;
        case Csv::unquoted:
          if (c == delim)
            csv = Csv::field_start;
          else if (c == '\n')
            return done(i);
          break;
        case Csv::quoted:
          if (c == '"')
            csv = Csv::quote_in_quoted;
          else if (c == '\n')
            ++newlines;
          break;
        case Csv::quote_in_quoted:
          if (c == '"')
            csv = Csv::quoted;
          else if (c == delim)
            csv = Csv::field_start;
          else if (c == '\n')
            return done(i);
          else {
            // Text after a closing quote. On one line a quirk, read as it
            // is; after line ends, a stray quote that took them in.
            if (c != '\r' && newlines > 0) stray_in_record = true;
            csv = Csv::unquoted;
          }
          break;
      }
    }
    scan = end;
    return std::string_view::npos;
  }
  std::size_t done(std::size_t i) {
    scan = i;
    return i;
  }

  // Starts the next record after the newline at `nl`.
  void advance(std::size_t nl) {
    stray_quote = stray_in_record;
    stray_in_record = false;
    line += 1 + newlines;
    newlines = 0;
    csv = Csv::field_start;
    start = scan = nl + 1;
  }

  bool next(RawRecord& out) {
    eof_in_quotes = false;
    stray_quote = false;
    if (bom_pending && !settle_bom(out)) return out.kind == RawRecord::Kind::incomplete;
    for (;;) {
      const std::size_t nl = find_end();
      if (nl != std::string_view::npos) {
        if (skipping) {
          out.text = std::string_view(prefix.get(), prefix_size);
          out.offset = skip_offset;
          out.line = skip_line;
          out.kind = RawRecord::Kind::too_long;
          out.end_offset = base + nl + 1;
          skipping = false;
          advance(nl);
          return true;
        }
        std::size_t text_end = nl;
        if (text_end > start && buf[text_end - 1] == '\r') --text_end;
        out.text = std::string_view(buf.get() + start, text_end - start);
        out.offset = base + start;
        out.end_offset = base + nl + 1;
        out.line = line;
        if (out.text.size() > max) {
          // Whole in the buffer but too long all the same.
          out.text = out.text.substr(0, std::min(max, too_long_prefix));
          out.kind = RawRecord::Kind::too_long;
        } else {
          out.kind = blank(out.text) ? RawRecord::Kind::empty : RawRecord::Kind::record;
        }
        advance(nl);
        return true;
      }
      if (!skipping && end - start > max) {
        // Too long: keep its first bytes, drop the rest as it comes.
        prefix_size = std::min(max, too_long_prefix);
        std::memcpy(prefix.get(), buf.get() + start, prefix_size);
        skipping = true;
        skip_offset = base + start;
        skip_line = line;
      }
      if (skipping) {
        base += end;
        start = end = scan = 0;
      }
      if (!refill()) {
        eof_in_quotes = csv == Csv::quoted;
        if (skipping) {
          // The stream ends inside a too-long record: report it now.
          out.text = std::string_view(prefix.get(), prefix_size);
          out.offset = skip_offset;
          out.line = skip_line;
          out.kind = RawRecord::Kind::too_long;
          out.end_offset = base + end;
          skipping = false;
          line += 1 + newlines;
          newlines = 0;
          csv = Csv::field_start;
          return true;
        }
        if (start == end) return false;
        out.text = std::string_view(buf.get() + start, end - start);
        out.offset = base + start;
        out.end_offset = base + end;
        out.line = line;
        out.kind = RawRecord::Kind::incomplete;
        return true;
      }
    }
  }

  // Skips a UTF-8 BOM at the stream's start. False when next() must return
  // now: with false when nothing has arrived yet (out.kind is left `record`),
  // or with an incomplete record when only a BOM's first bytes have.
  bool settle_bom(RawRecord& out) {
    while (end - start < 3 && refill()) {
    }
    static constexpr char bom[] = "\xEF\xBB\xBF";
    const std::size_t have = end - start;
    const std::size_t n = std::min<std::size_t>(have, 3);
    const bool prefix_matches = std::memcmp(buf.get() + start, bom, n) == 0;
    if (have >= 3) {
      if (prefix_matches) start = scan = start + 3;
      bom_pending = false;
      return true;
    }
    if (have == 0) {
      out.kind = RawRecord::Kind::record;
      return false;
    }
    if (!prefix_matches) {
      bom_pending = false;
      return true;
    }
    out.text = std::string_view(buf.get() + start, have);
    out.offset = base + start;
    out.end_offset = base + end;
    out.line = line;
    out.kind = RawRecord::Kind::incomplete;
    return false;
  }
};

RecordReader::RecordReader(ByteSource& source, Format format, std::size_t max_record_bytes,
                           std::uint64_t first_line, std::size_t chunk_bytes)
    : s_(std::make_unique<State>(source, format, max_record_bytes, first_line, chunk_bytes)) {}

RecordReader::~RecordReader() = default;

bool RecordReader::next(RawRecord& out) {
  return s_->next(out);
}

std::uint64_t RecordReader::offset() const noexcept {
  return s_->base + s_->start;
}

std::uint64_t RecordReader::line() const noexcept {
  return s_->line;
}

bool RecordReader::stray_quote() const noexcept {
  return s_->stray_quote;
}

bool RecordReader::ended_in_quotes() const noexcept {
  return s_->eof_in_quotes;
}

}  // namespace auditpipe::ingest
