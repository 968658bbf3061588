/* seglog_int: the private layout of a seglog (struct seglog, its segments,
 * the state index entries) and the helpers its modules share: seglog.c
 * (open, replay, catch-up, append, get; logwatch spares a read's stats),
 * seglog_manifest.c (the manifest and
 * the roll), seglog_batch.c, seglog_iter.c, seglog_compact.c and
 * seglog_maint.c. Included only by those files. */
#ifndef STORH_SEGLOG_INT_H
#define STORH_SEGLOG_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#include "buf.h"
#include "fsx.h"
#include "gcommit.h"
#include "idmap.h"
#include "logwatch.h"
#include "seglog.h"

#define NAME_CAP 64
/* A batch's spool is read back in chunks of this many bytes: a chunk's
 * buffer is fresh memory on a process's first batch, and at 1 MiB its
 * pages cost 4-5 ms to touch in the VMs measured (bench/NOTES.md) */
#define BATCH_CHUNK (128 * 1024)
#define PUT_PREFIX "{\"op\":\"put\",\"id\":\""
#define PUT_PREFIX_LEN 18
#define DEL_PREFIX "{\"op\":\"delete\",\"id\":\""
#define DEL_PREFIX_LEN 21

enum { OP_PUT = 1, OP_DELETE, OP_OTHER };

typedef struct sparse_ent {
    char id[UUID7_LEN];
    uint64_t off;
} sparse_ent;

typedef struct seg {
    char file[NAME_CAP], index[NAME_CAP];
    char min[UUID7_LEN + 1], max[UUID7_LEN + 1];
    bool has_minmax, ordered, compacted;
    long long records;
    uint64_t size;
    sparse_ent *sp;
    size_t nsp, capsp;
} seg;

typedef struct live {
    uint32_t seg;
    uint8_t deleted;
    uint8_t other;
    uint64_t off;
} live;

typedef struct bad_line {
    uint32_t seg;
    uint64_t off, len;
} bad_line;

struct seglog {
    char dir[PATH_MAX];
    char manifest_path[PATH_MAX]; /* dir/manifest.jsonc, stat()ed by every read */
    seglog_opts o;
    pthread_mutex_t mu;
    fsx_lock lock;
    char identity[32];
    seg *segs; /* sealed in manifest order, then the active one last */
    size_t nsegs;
    /* bumped whenever segs is replaced so that an index or offset may now
     * name another line (a compaction here or elsewhere, a repair): open
     * iterators then find their place again (seglog_iter.c) */
    uint64_t gen;
    long long next_segment;
    int active_fd;
    bool need_lf; /* the active segment ends with a valid line but no LF */
    idmap state;
    bad_line *bad;
    size_t nbad;
    struct stat manifest_st;
    /* NULL: every read stats the manifest and the active segment; else
     * only when the watch saw a change since the last such check */
    logwatch *watch;
    gcommit gc;
    unsigned long tmp_seq;
    /* equality counters, storh's count() fast path: field -> {SJSON(value)
     * -> count}, built on the first count of a field, kept up to date by
     * appends of new ids, and dropped (all of them) by a re-put or a delete */
    json_t *counters;
    buf count_key; /* a counted value's SJSON, under mu */
};

#define COUNTER_MAX_VALUES 64

/* What replay does with an invalid unterminated tail: a writer under the
 * flock cuts it (a torn write) or keeps its bytes counted (appends go after
 * it); a reader without the flock leaves it unread, since another process
 * may still be writing that line. */
enum { TORN_TRUNCATE, TORN_KEEP, TORN_LEAVE };

/* seglog.c */
seg *seglog__active(seglog *s);
int seglog__seg_path(const seglog *s, const char *file, char *out, storh_err *err);
bool seglog__safe_file_name(const char *f);
void seglog__seg_reset_stats(seg *g);
void seglog__segs_free(seglog *s);
seg *seglog__segs_push(seglog *s, const char *file, const char *index);
bool seglog__line_valid(const char *p, size_t n, int *op, char id[UUID7_LEN + 1]);
/* As seglog__line_valid, and *json, *jlen: the envelope's bytes in p. */
bool seglog__line_envelope(const char *p, size_t n, int *op, char id[UUID7_LEN + 1],
                           const char **json, size_t *jlen);
void seglog__seg_note(seg *g, int interval, const char *id, uint64_t off);
void seglog__apply(seglog *s, uint32_t si, uint64_t off, int op, const char *id, const char *line,
                   size_t len);
uint64_t seglog__scan_lines(seglog *s, uint32_t si, const char *b, uint64_t base, uint64_t len,
                            bool *torn);
int seglog__replay(seglog *s, int torn_mode, storh_err *err);
int seglog__lock(seglog *s, storh_err *err);
void seglog__unlock(seglog *s);
int seglog__catch_up(seglog *s, storh_err *err);
int seglog__refresh(seglog *s, storh_err *err);
int seglog__append_lines(seglog *s, const char *lines, size_t len, gcommit_ticket *t,
                         storh_err *err);
int seglog__encode_put(buf *line, const char *id, const json_t *data, storh_err *err);
int seglog__resolve_id(const char *id, char out[UUID7_LEN + 1], storh_err *err);

/* seglog_iter.c (besides the iterator): the envelope of a record line */
int seglog__decode_put(const char *line, size_t len, const char *want_id, json_t **data,
                       storh_err *err);
/* seglog__decode_put of an envelope whose frame was checked. */
int seglog__decode_envelope(const char *j, size_t jl, const char *want_id, json_t **data,
                            storh_err *err);
/* For a canonical put envelope j (of want_id, if set) whose data bytes are
 * exactly what the encoder writes for the data a read hands out (reccanon:
 * an object, no integer key): those bytes, inside j. */
bool seglog__put_raw(const char *j, size_t jl, const char *want_id, const char **raw,
                     size_t *rawlen);

/* seglog_manifest.c */
int seglog__manifest_write(seglog *s, storh_err *err);
int seglog__manifest_load(seglog *s, bool *exists, storh_err *err);
bool seglog__manifest_changed(seglog *s);
long long seglog__seg_number(const char *file);
int seglog__touch(const char *path, storh_err *err);
int seglog__open_active(seglog *s, storh_err *err);
void seglog__remove_unreferenced(seglog *s);
int seglog__write_sparse(seglog *s, seg *g, storh_err *err);
/* How a sparse index is written: published (temp file, fsync, rename,
 * directory fsync); or in place, for a file no manifest names yet, with an
 * fsync whose directory fsync the caller owes before a manifest names it
 * (the roll), or without one (compaction's syncfs makes it durable). */
enum { SPARSE_PUBLISH, SPARSE_SYNC, SPARSE_NOSYNC };
int seglog__write_sparse_as(seglog *s, seg *g, int how, storh_err *err);
void seglog__index_name_for(const char *file, char *out);
int seglog__roll(seglog *s, storh_err *err);

/* seglog_maint.c */
void seglog__counters_note(seglog *s, int op, bool fresh, const char *line, size_t len);

#endif
