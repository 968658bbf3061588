#include "estats.h"

_Atomic uint64_t estats_counters[ESTAT__COUNT];

const char *estats_name(estat_id id)
{
    static const char *const names[ESTAT__COUNT] = {
        [ESTAT_FSYNC_FILE] = "fsync_file",   [ESTAT_FSYNC_DIR] = "fsync_dir",
        [ESTAT_FSYNC_FS] = "syncfs",         [ESTAT_RENAME] = "rename",
        [ESTAT_DOC_PUT] = "doc_put",         [ESTAT_DOC_GET] = "doc_get",
        [ESTAT_DOC_DELETE] = "doc_delete",   [ESTAT_DOC_SCAN] = "doc_scan",
        [ESTAT_LOG_APPEND] = "log_append",   [ESTAT_LOG_READ] = "log_read",
        [ESTAT_LOG_ROLL] = "log_roll",       [ESTAT_LOG_ROLL_FAILED] = "log_roll_failed",
        [ESTAT_LOG_COMPACT] = "log_compact", [ESTAT_QUEUE_EVENT] = "queue_event",
    };
    return (id < ESTAT__COUNT) ? names[id] : "unknown";
}
