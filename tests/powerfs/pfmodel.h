/* pfmodel: what a power cut would leave of the filesystem powerfs passes
 * through. It owns the durable image: per file the bytes of its last
 * fsync/fdatasync (kept in a shadow directory), per directory its entries
 * at its last fsync, both as of the last syncfs at the latest, and the
 * directory operations made since. pf_cut rewrites the backing directory
 * to a state the model allows and makes that state the new durable one.
 *
 * A node is a file or directory the model knows, identified by the
 * backing inode it has while it lives (an inode number freed by the last
 * unlink can come back for a new file; that is a new node). A node is
 * CLEAN while its durable state is its live state (nothing changed since
 * the mount, the last cut or syncfs; a directory also right after its
 * fsync): it then holds no copy. Before its first change a file's bytes
 * are copied to the shadow directory, a directory's entries into memory;
 * before its last link goes, a file's inode is linked into the shadow. */
#ifndef STORHD_PFMODEL_H
#define STORHD_PFMODEL_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct pf_node pf_node;

typedef struct pf_stats {
    unsigned long fsyncs, fsyncdirs, syncfs, dirops, cuts;
    unsigned long cut_files, cut_dropped, cut_torn; /* of the last cut */
} pf_stats;

/* backing: the directory passed through; shadow: an empty scratch dir. */
int pf_init(const char *backing, const char *shadow);
void pf_free(void);
const pf_stats *pf_stats_get(void);
/* Nodes live until the next cut, which frees them all: a handle kept
 * across a cut compares its generation with this one. */
unsigned long pf_generation(void);

/* The node of a live inode; a node the model has not seen yet existed
 * before the mount or the last cut, so it is CLEAN. */
pf_node *pf_lookup(ino_t ino, bool dir);
/* A file or directory just created (its durable state: absent, empty). */
pf_node *pf_created(ino_t ino, bool dir);

/* Before data changes: fd reads the live file (-1: open path, relative to
 * the backing directory). [lo, hi) is the byte range about to change. */
int pf_before_write(pf_node *n, int fd, const char *path, off_t lo, off_t hi);
/* fsync or fdatasync of a file open as fd. */
int pf_fsync(pf_node *n, int fd);

/* Before an entry of dir (at path) is added, removed or replaced. */
int pf_before_dirop(pf_node *dir, const char *path);
/* Before the last link of n (at path) goes: a CLEAN node keeps a copy. */
int pf_before_death(pf_node *n, const char *path);
/* After the last link of n went: its inode number may come back. */
void pf_died(pf_node *n);
/* A directory operation done: name bound to n in ddir (create, mkdir, the
 * target of a rename), and for a rename or unlink the entry sname of sdir
 * that was bound to n removed. NULL for the side that does not apply. */
void pf_dirop(pf_node *sdir, const char *sname, pf_node *ddir, const char *dname, pf_node *n);
/* fsync of a directory at path. */
int pf_fsyncdir(pf_node *dir, const char *path);
/* syncfs: everything live is durable. */
void pf_syncfs(void);

/* Power cut: rewrites the backing directory to the durable state (strict),
 * or with seed != 0 to a state where each directory operation since its
 * directory's last fsync is kept or dropped by a coin, and each changed
 * 4 KiB page of a file is new or old by a coin, its appended bytes kept
 * up to a page boundary. Neither leaves what no disk can: a rename the cut
 * does not keep leaves the file under its old name (never under none), an
 * operation into a directory whose making is dropped is dropped too, and
 * a surviving file whose bytes are all durable keeps its inode and mtime
 * (also one whose last link went, by an unlink or rename that is undone).
 * Nothing may be open for writing. */
int pf_cut(unsigned long long seed);

#endif
