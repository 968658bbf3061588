/* recfile: the listing of every record file of a store in id byte order,
 * kept compactly (the names in one arena, no allocation per file), so a
 * stream or an export costs about 50 bytes per record while it is open
 * instead of two strings each. A record file itself is read with
 * fsx_read_all_stat (open, fstat, read, close). */
#ifndef STORH_RECFILE_H
#define STORH_RECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "buf.h"
#include "storh_err.h"

typedef struct recfile_ent {
    uint32_t key;   /* arena offset of the basename without .jsonc */
    uint32_t dir;   /* index into dirs */
    uint32_t order; /* walk order: a later duplicate basename wins */
    uint32_t klen;
} recfile_ent;

typedef struct recfile_list {
    char *arena; /* directory paths and keys, each NUL-terminated */
    size_t alen, acap;
    uint32_t *dirs; /* arena offsets of the directory paths */
    size_t ndirs, dcap;
    recfile_ent *e;
    size_t n, cap;
    size_t found; /* record files walked, those a keep left out too */
} recfile_list;

/* Lists every *.jsonc under datadir (any depth up to 64), sorted by key in
 * byte order, one entry per key (the last one found). A missing datadir is
 * an empty list. On error errno tells why; l is left empty. Free with
 * recfile_list_free. */
int recfile_list_open(const char *datadir, recfile_list *l);
/* Whether a file found goes into the listing: name is its name in the
 * directory dirfd (whose path, as walked from datadir, is dir), its key
 * the first klen bytes. */
typedef bool (*recfile_keep_fn)(void *ctx, int dirfd, const char *dir, const char *name,
                                size_t klen);
/* As recfile_list_open, leaving out each file keep returns false for
 * (called as the files are found, before the sort; NULL keeps all). */
int recfile_list_open_keep(const char *datadir, recfile_list *l, recfile_keep_fn keep, void *ctx);
/* As recfile_list_open_keep, with datadir's directories walked by two
 * threads at once, half each (the caller's and one it starts), when
 * datadir holds at least RECFILE_SPLIT_MIN entries, all of them
 * directories (a store's shards), and its first directory's files times
 * their count reach RECFILE_SPLIT_FILES; else in one walk. The listing is
 * the one walk's, in the same order. keep is then called from both
 * threads at once, for files of different directories. */
#define RECFILE_SPLIT_MIN 16
#define RECFILE_SPLIT_FILES 4096
int recfile_list_open_split(const char *datadir, recfile_list *l, recfile_keep_fn keep, void *ctx);
void recfile_list_free(recfile_list *l);
static inline const char *recfile_list_key(const recfile_list *l, size_t i)
{
    return l->arena + l->e[i].key;
}
/* The file's path into out (PATH_MAX); -1 if it does not fit. */
int recfile_list_path(const recfile_list *l, size_t i, char *out);

#endif
