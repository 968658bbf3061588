/* qstage: all-or-nothing multi-event appends to a queue's queue.log. The
 * events are first published (fsync, rename, directory fsync) as a stage
 * file <queue>/queue.batch-<16hex>: its first line says at which log offset
 * they go, the rest are their exact bytes. On open, under the queue's lock
 * and before replay, every stage file is rolled forward: the part of its
 * events the log lacks is appended (a crash may have cut the append at any
 * byte), so a batch whose stage was durable ends up whole, and one whose
 * stage was not never reached the log. */
#ifndef STORH_QSTAGE_H
#define STORH_QSTAGE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "storh_err.h"

/* Publishes the stage of bytes (whole framed lines) about to be appended at
 * log offset off; *path receives its name (PATH_MAX) for qstage_remove. On
 * an error no stage is left (one renamed into place before its directory's
 * sync failed is unlinked, and the directory synced) and path is empty; or,
 * when that removal could not be made durable, path still names the stage,
 * which the next open may roll forward (the caller refuses later writes). */
int qstage_write(const char *dir, uint64_t off, const char *bytes, size_t len, char *path,
                 storh_err *err);
/* Drops a stage once its events are durable in the log (or cut away). */
void qstage_remove(const char *path);
/* Rolls every stage file of dir forward into the log open as log_fd (under
 * the queue's flock, before replay). Idempotent and crash-safe: a stage
 * leaves only after its events are durable in the log. */
int qstage_recover(const char *dir, int log_fd, storh_err *err);

#endif
