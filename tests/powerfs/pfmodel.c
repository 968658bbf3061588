/* pfmodel: the durable image behind powerfs (see pfmodel.h). */
#include "pfmodel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096
#define BUCKETS 65536

typedef struct pf_ent {
    char *name;
    pf_node *node;
} pf_ent;

typedef struct pf_ents {
    pf_ent *v;
    size_t n, cap;
} pf_ents;

struct pf_node {
    unsigned long id;
    bool dir, clean;
    ino_t ino;           /* 0 once its last link went */
    bool dirty;          /* file: bytes [lo, hi) changed since the last sync */
    bool held;           /* file: its last link went; the inode is kept in the shadow */
    bool unborn;         /* directory: the operation that made it is not durable yet */
    off_t lo, hi, dsize; /* dsize: durable size, the bytes in the shadow file */
    pf_ents ents;        /* directory: durable entries (unless clean) */
    unsigned long snap;  /* directory: ops up to this seq are in ents */
    pf_node *hnext;
    /* during a cut */
    pf_ents target;
    bool tdone, built;
    bool lost; /* directory: the cut drops the operation that made it */
    char *livepath, *outpath;
};

/* A directory operation: sname of sdir unbound from node, dname of ddir bound to it. */
typedef struct pf_op {
    unsigned long seq;
    pf_node *sdir, *ddir, *node;
    char *sname, *dname;
} pf_op;

static char backing[PATH_MAX], shadow[PATH_MAX];
static pf_node **nodes;
static size_t nnodes, capnodes;
static pf_node *hash[BUCKETS];
static pf_op *ops;
static size_t nops, capops;
static unsigned long next_id = 1, seq;
static pf_stats stats;

const pf_stats *pf_stats_get(void)
{
    return &stats;
}

unsigned long pf_generation(void)
{
    return stats.cuts;
}

/* A test tool: out of memory ends it. */
static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (!q)
        abort();
    return q;
}

static void bpath(char out[PATH_MAX], const char *rel)
{
    snprintf(out, PATH_MAX, "%s%s", backing, rel && strcmp(rel, "/") ? rel : "");
}

static void spath(char out[PATH_MAX], const pf_node *n)
{
    snprintf(out, PATH_MAX, "%s/%lu", shadow, n->id);
}

/* The shadow's link to the inode of a file whose last link went. */
static void hpath(char out[PATH_MAX], const pf_node *n)
{
    snprintf(out, PATH_MAX, "%s/%lu.ino", shadow, n->id);
}

/* Forgets a node's copies in the shadow. */
static void drop_copies(pf_node *n)
{
    char p[PATH_MAX];
    if (!n->dir && !n->clean) {
        spath(p, n);
        unlink(p);
    }
    if (n->held) {
        hpath(p, n);
        unlink(p);
        n->held = false;
    }
}

static void ents_add(pf_ents *e, const char *name, pf_node *n)
{
    if (e->n == e->cap) {
        e->cap = e->cap * 2 + 8;
        e->v = xrealloc(e->v, e->cap * sizeof *e->v);
    }
    e->v[e->n].name = strdup(name);
    e->v[e->n++].node = n;
}

static void ents_clear(pf_ents *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].name);
    free(e->v);
    memset(e, 0, sizeof *e);
}

static pf_ent *ents_find(pf_ents *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (!strcmp(e->v[i].name, name))
            return &e->v[i];
    return NULL;
}

static void ents_remove(pf_ents *e, pf_ent *x)
{
    free(x->name);
    *x = e->v[--e->n];
}

static void ents_copy(pf_ents *to, const pf_ents *from)
{
    for (size_t i = 0; i < from->n; i++)
        ents_add(to, from->v[i].name, from->v[i].node);
}

static void hash_remove(pf_node *n)
{
    for (pf_node **p = &hash[n->ino % BUCKETS]; *p; p = &(*p)->hnext)
        if (*p == n) {
            *p = n->hnext;
            break;
        }
    n->ino = 0;
    n->hnext = NULL;
}

static pf_node *node_new(ino_t ino, bool dir, bool clean)
{
    pf_node *old = NULL;
    for (pf_node *h = hash[ino % BUCKETS]; h; h = h->hnext)
        if (h->ino == ino)
            old = h;
    if (old)
        hash_remove(old);
    pf_node *n = calloc(1, sizeof *n);
    n->id = next_id++;
    n->dir = dir;
    n->clean = clean;
    n->ino = ino;
    n->snap = seq;
    n->hnext = hash[ino % BUCKETS];
    hash[ino % BUCKETS] = n;
    if (nnodes == capnodes) {
        capnodes = capnodes * 2 + 1024;
        nodes = xrealloc(nodes, capnodes * sizeof *nodes);
    }
    nodes[nnodes++] = n;
    return n;
}

pf_node *pf_lookup(ino_t ino, bool dir)
{
    for (pf_node *h = hash[ino % BUCKETS]; h; h = h->hnext)
        if (h->ino == ino && h->dir == dir)
            return h;
    return node_new(ino, dir, true);
}

pf_node *pf_created(ino_t ino, bool dir)
{
    pf_node *n = node_new(ino, dir, false);
    n->unborn = dir;
    return n;
}

static int copy_range(int from, int to, off_t lo, off_t hi)
{
    char b[65536];
    while (lo < hi) {
        size_t want = (size_t)(hi - lo) < sizeof b ? (size_t)(hi - lo) : sizeof b;
        ssize_t r = pread(from, b, want, lo);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0) /* shorter than expected: the rest is a hole */
            break;
        if (pwrite(to, b, (size_t)r, lo) != r)
            return -EIO;
        lo += r;
    }
    return 0;
}

/* Before the first change of a CLEAN file: its live bytes become the copy. */
static int materialize(pf_node *n, int fd, const char *path)
{
    if (n->dir || !n->clean)
        return 0;
    char p[PATH_MAX];
    int own = -1;
    if (fd < 0) {
        bpath(p, path);
        fd = own = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
    }
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : -errno;
    spath(p, n);
    int sfd = rc ? -1 : open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (!rc && sfd < 0)
        rc = -errno;
    if (!rc)
        rc = copy_range(fd, sfd, 0, st.st_size);
    if (sfd >= 0)
        close(sfd);
    if (own >= 0)
        close(own);
    if (!rc) {
        n->clean = false;
        n->dirty = false;
        n->dsize = st.st_size;
    }
    return rc;
}

int pf_before_write(pf_node *n, int fd, const char *path, off_t lo, off_t hi)
{
    int rc = materialize(n, fd, path);
    if (rc)
        return rc;
    if (!n->dirty || lo < n->lo)
        n->lo = lo;
    if (!n->dirty || hi > n->hi)
        n->hi = hi;
    n->dirty = true;
    return 0;
}

int pf_fsync(pf_node *n, int fd)
{
    stats.fsyncs++;
    if (n->dir || n->clean || !n->dirty)
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -errno;
    char p[PATH_MAX];
    spath(p, n);
    int sfd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (sfd < 0)
        return -errno;
    off_t hi = n->hi < st.st_size ? n->hi : st.st_size;
    int rc = copy_range(fd, sfd, n->lo, hi);
    if (!rc && ftruncate(sfd, st.st_size) != 0)
        rc = -errno;
    close(sfd);
    if (!rc) {
        n->dsize = st.st_size;
        n->dirty = false;
    }
    return rc;
}

/* The live entries of the directory at rel (regular files and directories). */
static int read_live(const char *rel, pf_ents *out)
{
    char p[PATH_MAX];
    bpath(p, rel);
    DIR *d = opendir(p);
    if (!d)
        return -errno;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))
            ents_add(out, de->d_name, pf_lookup(st.st_ino, S_ISDIR(st.st_mode)));
    }
    closedir(d);
    return 0;
}

int pf_before_dirop(pf_node *dir, const char *path)
{
    if (!dir->clean)
        return 0;
    int rc = read_live(path, &dir->ents);
    if (rc)
        return rc;
    dir->clean = false;
    dir->snap = seq;
    return 0;
}

int pf_before_death(pf_node *n, const char *path)
{
    if (n->dir)
        return pf_before_dirop(n, path);
    int rc = materialize(n, -1, path);
    if (rc || n->held)
        return rc;
    /* a cut that brings the name back brings this inode back, as a real
     * disk does (the shadow is on the backing filesystem) */
    char p[PATH_MAX], h[PATH_MAX];
    bpath(p, path);
    hpath(h, n);
    if (link(p, h) != 0)
        return -errno;
    n->held = true;
    return 0;
}

void pf_died(pf_node *n)
{
    if (n->ino)
        hash_remove(n);
}

void pf_dirop(pf_node *sdir, const char *sname, pf_node *ddir, const char *dname, pf_node *n)
{
    if (nops == capops) {
        capops = capops * 2 + 256;
        ops = xrealloc(ops, capops * sizeof *ops);
    }
    ops[nops++] =
        (pf_op){++seq, sdir, ddir, n, sname ? strdup(sname) : NULL, dname ? strdup(dname) : NULL};
    stats.dirops++;
}

/* Drops the operations every directory they touch has made durable since,
 * unless made in a directory whose own making is not durable yet (a cut
 * that drops it must undo them too). In order: a directory is made before
 * anything is made in it. */
static void prune_ops(void)
{
    size_t k = 0;
    for (size_t i = 0; i < nops; i++) {
        pf_op *o = &ops[i];
        bool live = (o->sdir && o->seq > o->sdir->snap) ||
                    (o->ddir && (o->seq > o->ddir->snap || o->ddir->unborn));
        if (!live && !o->sname && o->node->dir)
            o->node->unborn = false;
        if (live) {
            ops[k++] = *o;
        } else {
            free(o->sname);
            free(o->dname);
        }
    }
    nops = k;
}

int pf_fsyncdir(pf_node *dir, const char *path)
{
    (void)path;
    stats.fsyncdirs++;
    ents_clear(&dir->ents);
    dir->clean = true;
    dir->snap = seq;
    prune_ops();
    return 0;
}

static void ops_clear(void)
{
    for (size_t i = 0; i < nops; i++) {
        free(ops[i].sname);
        free(ops[i].dname);
    }
    nops = 0;
}

void pf_syncfs(void)
{
    stats.syncfs++;
    for (size_t i = 0; i < nnodes; i++) {
        pf_node *n = nodes[i];
        drop_copies(n);
        ents_clear(&n->ents);
        n->clean = true;
        n->dirty = false;
        n->unborn = false;
        n->snap = seq;
    }
    ops_clear();
}

/* ---- the cut ---- */

static unsigned long long rng;

static bool coin(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng & 1;
}

static unsigned long long pick(unsigned long long n)
{
    coin();
    return n ? rng % n : 0;
}

/* Every live regular file and directory gets its node and live path. */
static void walk_live(const char *rel, pf_node *dir)
{
    pf_ents e = {0};
    if (read_live(rel, &e) == 0) {
        for (size_t i = 0; i < e.n; i++) {
            pf_node *n = e.v[i].node;
            if (n->livepath)
                continue;
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s/%s", rel, e.v[i].name);
            n->livepath = strdup(sub);
            if (n->dir)
                walk_live(sub, n);
        }
    }
    ents_clear(&e);
    (void)dir;
}

static pf_ents *target_of(pf_node *d)
{
    if (!d->tdone) {
        if (!d->clean)
            ents_copy(&d->target, &d->ents);
        else if (d->livepath)
            read_live(d->livepath, &d->target);
        d->tdone = true;
    }
    return &d->target;
}

/* Applies the kept parts of o to the targets of its directories. */
static void replay(pf_op *o)
{
    if (o->sdir && o->sname && o->seq > o->sdir->snap) {
        pf_ent *x = ents_find(target_of(o->sdir), o->sname);
        if (x && x->node == o->node)
            ents_remove(&o->sdir->target, x);
    }
    if (o->ddir && o->dname && o->seq > o->ddir->snap) {
        pf_ents *t = target_of(o->ddir);
        pf_ent *x = ents_find(t, o->dname);
        if (x)
            x->node = o->node;
        else
            ents_add(t, o->dname, o->node);
    }
}

/* Decides what the cut leaves of o (operations in the order they were
 * made; random: a coin keeps or drops each). A rename is atomic on a real
 * disk: the file ends under exactly one of its two names, so one the cut
 * does not keep (not durable in its destination, not chosen, or into a
 * directory whose own making the cut drops) leaves the old name, even where
 * the source directory's fsync made the removal durable. An operation into
 * a directory whose making the cut drops is dropped with it, even where
 * that directory's own fsync made it durable: what was renamed into it
 * stays under its old name rather than vanish with it. */
static void settle(pf_op *o, bool random)
{
    bool chosen = random && coin();
    if (!o->ddir) { /* unlink, rmdir */
        if (chosen)
            replay(o);
        return;
    }
    if (!o->ddir->lost && (o->seq <= o->ddir->snap || chosen)) {
        if (chosen)
            replay(o);
        if (o->node->dir)
            o->node->lost = false;
        return;
    }
    if (!o->sname) { /* a create or mkdir the cut drops */
        o->node->lost = o->node->dir;
        return;
    }
    if (o->seq <= o->sdir->snap) { /* the removal was durable: undone */
        pf_ents *t = target_of(o->sdir);
        if (!ents_find(t, o->sname))
            ents_add(t, o->sname, o->node);
    }
    if (o->seq <= o->ddir->snap) { /* durable into a lost directory */
        pf_ent *x = ents_find(target_of(o->ddir), o->dname);
        if (x && x->node == o->node)
            ents_remove(&o->ddir->target, x);
    }
}

static int write_range(int from, int to, off_t lo, off_t hi)
{
    return from < 0 ? 0 : copy_range(from, to, lo, hi);
}

/* The file as the cut leaves it: its durable bytes, or with a seed, torn. */
static int build_file(pf_node *n, const char *out, bool random)
{
    int rc = 0, live = -1, dur = -1;
    char p[PATH_MAX];
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    if (n->livepath) {
        bpath(p, n->livepath);
        live = open(p, O_RDONLY | O_CLOEXEC);
    }
    if (n->clean) {
        struct stat st;
        if (live >= 0 && fstat(live, &st) == 0)
            rc = copy_range(live, fd, 0, st.st_size);
        goto done;
    }
    spath(p, n);
    dur = open(p, O_RDONLY | O_CLOEXEC);
    rc = write_range(dur, fd, 0, n->dsize);
    off_t size = n->dsize;
    struct stat st;
    if (!rc && random && n->dirty && live >= 0 && fstat(live, &st) == 0) {
        off_t lsize = st.st_size;
        if (lsize > n->dsize) { /* appended: kept up to a page boundary */
            off_t first = (n->dsize / PAGE + 1) * PAGE;
            off_t choices = first < lsize ? (lsize - first + PAGE - 1) / PAGE + 1 : 1;
            unsigned long long c = pick((unsigned long long)choices + 1);
            size = c == 0 ? n->dsize : first + (off_t)(c - 1) * PAGE;
            if (size > lsize)
                size = lsize;
            rc = copy_range(live, fd, n->dsize, size);
        } else if (lsize < n->dsize && coin()) {
            size = lsize;
        }
        off_t common = size < n->dsize ? size : n->dsize;
        off_t hi = n->hi < common ? n->hi : common;
        for (off_t pg = n->lo / PAGE * PAGE; !rc && pg < hi; pg += PAGE)
            if (coin()) {
                rc = copy_range(live, fd, pg, pg + PAGE < hi ? pg + PAGE : hi);
                stats.cut_torn++;
            }
    }
    if (!rc && ftruncate(fd, size) != 0)
        rc = -errno;
done:
    if (live >= 0)
        close(live);
    if (dur >= 0)
        close(dur);
    if (close(fd) != 0 && !rc)
        rc = -errno;
    return rc;
}

/* A file whose bytes are all durable keeps its inode: linked into the new
 * tree, not rebuilt, so its inode number and mtime are what a real disk
 * keeps (storhd's recovery compares them). That holds for a file whose
 * last link went too (an unlink or a replacing rename the cut undoes): its
 * inode was kept in the shadow. True once linked. */
static bool keep_file(const pf_node *n, const char *out)
{
    char p[PATH_MAX];
    struct stat st;
    if ((!n->livepath && !n->held) || (!n->clean && n->dirty))
        return false;
    if (n->livepath)
        bpath(p, n->livepath);
    else
        hpath(p, n);
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode) || (!n->clean && st.st_size != n->dsize))
        return false;
    return link(p, out) == 0;
}

static int build_dir(pf_node *d, const char *out, bool random)
{
    pf_ents *t = target_of(d);
    for (size_t i = 0; i < t->n; i++) {
        pf_node *n = t->v[i].node;
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", out, t->v[i].name);
        int rc = 0;
        if (n->dir) {
            if (n->built)
                continue; /* a directory reached twice: keep the first */
            n->built = true;
            if (mkdir(p, 0755) != 0)
                return -errno;
            rc = build_dir(n, p, random);
        } else if (n->outpath) {
            rc = link(n->outpath, p) == 0 ? 0 : -errno;
        } else {
            rc = keep_file(n, p) ? 0 : build_file(n, p, random);
            n->outpath = strdup(p);
            stats.cut_files++;
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void free_node(pf_node *n)
{
    ents_clear(&n->ents);
    ents_clear(&n->target);
    free(n->livepath);
    free(n->outpath);
    free(n);
}

/* After a cut: the backing directory as it is now is the durable state. */
static void reset(void)
{
    for (size_t i = 0; i < nnodes; i++) {
        drop_copies(nodes[i]);
        free_node(nodes[i]);
    }
    nnodes = 0;
    memset(hash, 0, sizeof hash);
    ops_clear();
}

int pf_cut(unsigned long long seed)
{
    char p[PATH_MAX], out[PATH_MAX], old[PATH_MAX];
    struct stat st;
    stats.cuts++;
    stats.cut_files = stats.cut_dropped = stats.cut_torn = 0;
    rng = seed * 2654435761ULL + 88172645463325252ULL;
    bpath(p, "/");
    if (stat(p, &st) != 0)
        return -errno;
    pf_node *root = pf_lookup(st.st_ino, true);
    root->livepath = strdup("");
    walk_live("", root);
    for (size_t i = 0; i < nops; i++)
        settle(&ops[i], seed != 0);
    snprintf(out, sizeof out, "%s.cut", backing);
    snprintf(old, sizeof old, "%s.old", backing);
    nftw(out, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    int rc = mkdir(out, 0755) == 0 ? 0 : -errno;
    if (!rc)
        rc = build_dir(root, out, seed != 0);
    for (size_t i = 0; i < nnodes; i++)
        if (!nodes[i]->dir && nodes[i]->livepath && !nodes[i]->outpath)
            stats.cut_dropped++;
    if (!rc && rename(backing, old) != 0)
        rc = -errno;
    if (!rc && rename(out, backing) != 0)
        rc = -errno;
    nftw(old, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    reset();
    return rc;
}

int pf_init(const char *b, const char *s)
{
    snprintf(backing, sizeof backing, "%s", b);
    snprintf(shadow, sizeof shadow, "%s", s);
    return 0;
}

void pf_free(void)
{
    reset();
    free(nodes);
    free(ops);
    nodes = NULL;
    ops = NULL;
    capnodes = capops = 0;
}
