// auditpipe: asynchronous, batched audit logging into SQL databases.
// The one header an application includes (sinks have their own).
#pragma once

#include "auditpipe/column.h"
#include "auditpipe/diagnostics.h"
#include "auditpipe/dynamic_logger.h"
#include "auditpipe/fixed_string.h"
#include "auditpipe/histogram.h"
#include "auditpipe/logger.h"
#include "auditpipe/mapping.h"
#include "auditpipe/nullable.h"
#include "auditpipe/options.h"
#include "auditpipe/prometheus.h"
#include "auditpipe/schema.h"
#include "auditpipe/stats.h"
#include "auditpipe/status.h"
#include "auditpipe/table.h"
#include "auditpipe/timestamp.h"
#include "auditpipe/version.h"

/// Asynchronous, batched audit logging into SQL databases: Logger<Record>
/// and what it is made of (README.md). Its `internal` and `detail`
/// namespaces are the implementation's, not API.
namespace auditpipe {}
