// DynamicLogger's compiled half (the schema room, see schema.cpp): its
// construction. The producer path (acquire, the setters, commit) is inline
// in dynamic_logger.h.
#include "auditpipe/dynamic_logger.h"

#include <memory>
#include <utility>

namespace auditpipe {

namespace {
std::shared_ptr<const Schema> checked(std::shared_ptr<const Schema> schema) {
  if (schema == nullptr) throw error("auditpipe: DynamicLogger needs a schema (got nullptr)");
  return schema;
}
}  // namespace

DynamicLogger::DynamicLogger(const Schema& schema, std::shared_ptr<Sink> sink,
                             const Options& options)
    : DynamicLogger(std::make_shared<const Schema>(schema), std::move(sink), options) {}

// The engine keeps the schema too: records held past this logger still
// point at its descriptor, and the engine resets slots to its prototype.
DynamicLogger::DynamicLogger(std::shared_ptr<const Schema> schema, std::shared_ptr<Sink> sink,
                             const Options& options)
    : schema_(checked(std::move(schema))),
      pipeline_(schema_->descriptor(), std::move(sink), options, schema_) {}

}  // namespace auditpipe
