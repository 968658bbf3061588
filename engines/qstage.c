#include "qstage.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "estats.h"
#include "fault.h"
#include "frame.h"
#include "fsx.h"
#include "sjson.h"

#define STAGE_PREFIX "queue.batch-"
#define STAGE_PREFIX_LEN 12

typedef struct stage {
    char path[PATH_MAX];
    uint64_t off;
    buf b;        /* the whole file */
    size_t start; /* where the events begin in b */
} stage;

/* The stage: its header line, then the events written from where they
 * are (a batch's bytes are not copied to go with the header). */
static int publish(const char *path, uint64_t off, const char *bytes, size_t len, storh_err *err)
{
    json_t *h = json_pack("{sIsI}", "offset", (json_int_t)off, "length", (json_int_t)len);
    buf head = BUF_INIT;
    int rc =
        h ? sjson_encode(&head, h, 0, err) : storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    json_decref(h);
    buf_appendc(&head, '\n');
    if (!rc && buf_failed(&head))
        rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    if (!rc)
        rc = fsx_publish2(path, head.data, head.len, bytes, len, err);
    buf_free(&head);
    return rc;
}

int qstage_write(const char *dir, uint64_t off, const char *bytes, size_t len, char *path,
                 storh_err *err)
{
    char hex[17];
    int rc = fsx_random_hex(hex, 8, err);
    if (!rc)
        rc = fsx_pathf(path, err, "%s/" STAGE_PREFIX "%s", dir, hex);
    if (!rc)
        rc = publish(path, off, bytes, len, err);
    if (!rc && fault_fails("stagesync", dir)) /* as a failed directory sync */
        rc = storh_err_sys(err, EIO, "Could not sync directory %s", dir);
    /* renamed into place before its directory's sync failed, it would be
     * rolled forward on open: a batch answered with an error must not be,
     * so it goes, durably; if it cannot, path keeps its name */
    if (rc && path[0] && (unlink(path) == 0 || errno == ENOENT) && !fault_fails("stagesync", dir) &&
        fsx_fsync_dir(dir, NULL) == 0)
        path[0] = '\0';
    return rc;
}

void qstage_remove(const char *path)
{
    unlink(path);
}

static int append_all(int fd, const char *p, size_t len, uint64_t at, storh_err *err)
{
    if (fsx_write_all(fd, p, len) != 0) {
        int e = errno;
        int t = ftruncate(fd, (off_t)at); /* if not, the next open cuts the torn tail */
        (void)t;
        return storh_err_sys(err, e, "Could not complete a staged queue batch");
    }
    if (fsync(fd) != 0)
        return storh_err_sys(err, errno, "Could not sync a staged queue batch");
    estats_add(ESTAT_FSYNC_FILE, 1);
    return 0;
}

/* Whether log bytes [from, size) are whole framed lines (events another
 * process appended) rather than what a power cut leaves (a torn or zeroed
 * page, an unterminated tail). */
static int whole_events(int fd, uint64_t from, uint64_t size, bool *whole, storh_err *err)
{
    size_t n = (size_t)(size - from);
    char *b = malloc(n ? n : 1);
    if (!b)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    ssize_t r = n ? pread(fd, b, n, (off_t)from) : 0;
    if (r < 0 || (size_t)r != n) {
        free(b);
        return storh_err_sys(err, r < 0 ? errno : EIO, "Could not read log queue file.");
    }
    *whole = n > 0;
    for (size_t pos = 0; *whole && pos < n;) {
        const char *nl = memchr(b + pos, '\n', n - pos), *j;
        size_t jl;
        *whole = nl && frame_decode(b + pos, (size_t)(nl - b) - pos, true, &j, &jl, NULL) == 0;
        pos = nl ? (size_t)(nl - b) + 1 : n;
    }
    free(b);
    return 0;
}

/* Rolls one stage forward: the log holds, from the stage's offset, a prefix
 * of its events (possibly cut mid-line), all of them, or (when another
 * process appended after a cut, as storh does after cutting a torn tail)
 * whole lines of a prefix followed by other events. */
static int roll_forward(stage *s, int log_fd, storh_err *err)
{
    const char *ev = s->b.data + s->start;
    size_t len = s->b.len - s->start;
    struct stat st;
    if (fstat(log_fd, &st) != 0)
        return storh_err_sys(err, errno, "Could not read log queue file.");
    uint64_t size = (uint64_t)st.st_size;
    if (size < s->off) { /* cut before the batch began: it never was acknowledged */
        qstage_remove(s->path);
        return 0;
    }
    size_t have = size - s->off < len ? (size_t)(size - s->off) : len;
    char *cur = malloc(have ? have : 1);
    if (!cur)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    ssize_t r = have ? pread(log_fd, cur, have, (off_t)s->off) : 0;
    if (r < 0 || (size_t)r != have) {
        free(cur);
        return storh_err_sys(err, r < 0 ? errno : EIO, "Could not read log queue file.");
    }
    size_t k = 0;
    while (k < have && cur[k] == ev[k])
        k++;
    free(cur);
    size_t b = k; /* the end of the last whole line of the prefix */
    while (b > 0 && ev[b - 1] != '\n')
        b--;
    bool whole = false;
    int rc =
        k == len || s->off + k == size ? 0 : whole_events(log_fd, s->off + b, size, &whole, err);
    if (rc || k == len) {
    } else if (s->off + k == size) {
        rc = append_all(log_fd, ev + k, len - k, size, err);
    } else if (!whole) { /* torn bytes after the prefix: cut them, then finish */
        if (ftruncate(log_fd, (off_t)(s->off + b)) != 0)
            rc = storh_err_sys(err, errno, "Could not truncate torn tail of the queue log");
        if (!rc)
            rc = append_all(log_fd, ev + b, len - b, s->off + b, err);
    } else {
        /* other events follow a prefix of whole lines: the rest goes after
         * them; the stage says so first, so a crash here repeats nothing */
        rc = publish(s->path, size, ev + b, len - b, err);
        if (!rc)
            rc = append_all(log_fd, ev + b, len - b, size, err);
    }
    if (!rc)
        qstage_remove(s->path);
    return rc;
}

static int load(stage *s, const char *dir, const char *name, storh_err *err)
{
    int rc = fsx_pathf(s->path, err, "%s/%s", dir, name);
    if (!rc)
        rc = fsx_read_all(s->path, &s->b, err);
    if (rc)
        return rc;
    const char *nl = s->b.len ? memchr(s->b.data, '\n', s->b.len) : NULL;
    json_t *h = nl ? json_loadb(s->b.data, (size_t)(nl - s->b.data), 0, NULL) : NULL;
    json_t *o = json_object_get(h, "offset"), *l = json_object_get(h, "length");
    if (nl) {
        s->start = (size_t)(nl - s->b.data) + 1;
    }
    bool ok = json_is_integer(o) && json_integer_value(o) >= 0 && json_is_integer(l) &&
              (uint64_t)json_integer_value(l) == s->b.len - s->start;
    if (ok)
        s->off = (uint64_t)json_integer_value(o);
    json_decref(h);
    if (!ok)
        return storh_err_set(err, STORH_ECORRUPT, "Malformed queue batch stage: %s", s->path);
    return 0;
}

static int stage_cmp(const void *a, const void *b)
{
    const stage *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int qstage_recover(const char *dir, int log_fd, storh_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return storh_err_sys(err, errno, "Could not list %s", dir);
    stage *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        const char *nm = de->d_name;
        size_t nl = strlen(nm);
        if (nm[0] == '.' && !strncmp(nm + 1, STAGE_PREFIX, STAGE_PREFIX_LEN) && nl > 5 &&
            !strcmp(nm + nl - 4, ".tmp")) {
            char p[PATH_MAX]; /* a stage never published: its batch never began */
            if (!fsx_pathf(p, NULL, "%s/%s", dir, nm))
                unlink(p);
            continue;
        }
        if (strncmp(nm, STAGE_PREFIX, STAGE_PREFIX_LEN) != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            stage *g = realloc(v, cap * sizeof *g);
            if (!g) {
                rc = storh_err_set(err, STORH_ENOMEM, "Out of memory.");
                break;
            }
            v = g;
        }
        memset(&v[n], 0, sizeof v[n]);
        rc = load(&v[n], dir, nm, err);
        n++;
    }
    closedir(d);
    if (!rc && n > 1)
        qsort(v, n, sizeof *v, stage_cmp);
    for (size_t i = 0; !rc && i < n; i++)
        rc = roll_forward(&v[i], log_fd, err);
    for (size_t i = 0; i < n; i++)
        buf_free(&v[i].b);
    free(v);
    return rc;
}
