// The queue between producers and writers: pointers to committed slots.
#pragma once

#include <concurrentqueue/concurrentqueue.h>

#include "producer/record_pool.h"

namespace auditpipe::internal {

using RecordQueue = moodycamel::ConcurrentQueue<SlotHeader*>;

}  // namespace auditpipe::internal
