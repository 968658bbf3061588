/* estats: process-wide engine operation counters (fsyncs, renames, record
 * reads and writes). Engines bump them with relaxed atomics; the service
 * reads them for /metrics. Nothing here is persisted. */
#ifndef STORH_ESTATS_H
#define STORH_ESTATS_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum {
    ESTAT_FSYNC_FILE,
    ESTAT_FSYNC_DIR,
    ESTAT_FSYNC_FS,
    ESTAT_RENAME,
    ESTAT_DOC_PUT,
    ESTAT_DOC_GET,
    ESTAT_DOC_DELETE,
    ESTAT_DOC_SCAN,
    ESTAT_LOG_APPEND,
    ESTAT_LOG_READ,
    ESTAT_LOG_ROLL,
    ESTAT_LOG_ROLL_FAILED,
    ESTAT_LOG_COMPACT,
    ESTAT_QUEUE_EVENT,
    ESTAT__COUNT
} estat_id;

extern _Atomic uint64_t estats_counters[ESTAT__COUNT];

static inline void estats_add(estat_id id, uint64_t n)
{
    atomic_fetch_add_explicit(&estats_counters[id], n, memory_order_relaxed);
}
static inline uint64_t estats_get(estat_id id)
{
    return atomic_load_explicit(&estats_counters[id], memory_order_relaxed);
}
/* The metric suffix for a counter, e.g. "fsync_file". */
const char *estats_name(estat_id id);

#endif
