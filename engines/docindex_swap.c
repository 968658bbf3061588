/* docindex: the tree a rebuild writes beside the live entries/ and swaps in
 * whole (see docindex_int.h). A build that fails or is cut by a crash
 * before the swap leaves the old entries serving as they were, never none:
 * storh and other storhd processes read the files as they stand. */
#include "docindex_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"
#include "fsx.h"

#define ENTRIES_DIR "/entries"
#define SWAP_DIR "/.entries.swap" /* a build's tree, then the old one */

static int remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[PATH_MAX];
        if (fsx_pathf(p, NULL, "%s/%s", path, de->d_name))
            continue;
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rc |= remove_tree(p);
        else if (unlink(p) != 0)
            rc = -1;
    }
    closedir(d);
    return rmdir(path) == 0 ? rc : -1;
}

/* Gives every entry directory of the tree at swap a new name before the
 * tree is removed: each rename ends the watches other processes hold on it
 * (dirwatch.h: a directory moved), so that none of them keeps serving an
 * old tree's entries a moment longer than it must. */
static void retire_groups(const char *swap)
{
    static const char *const kinds[] = {"eq", "compound"};
    unsigned n = 0;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        char dir[PATH_MAX];
        if (fsx_pathf(dir, NULL, "%s/%s", swap, kinds[k]))
            continue;
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char from[PATH_MAX], to[PATH_MAX];
            if (de->d_name[0] == '.' || fsx_pathf(from, NULL, "%s/%s", dir, de->d_name) ||
                fsx_pathf(to, NULL, "%s/gone-%u", swap, n++))
                continue;
            (void)rename(from, to);
        }
        if (d)
            closedir(d);
    }
}

static int clear(const char *swap, storh_err *err)
{
    retire_groups(swap);
    return remove_tree(swap) == 0 ? 0 : storh_err_sys(err, errno, "Could not clear %s", swap);
}

int docindex_swap_begin(const docindex *ix, bool sync_parents, storh_err *err)
{
    char swap[PATH_MAX];
    int rc = fsx_pathf(swap, err, "%s%s", ix->dir, SWAP_DIR);
    if (!rc)
        rc = clear(swap, err);
    return rc ? rc : fsx_mkdirs(swap, sync_parents, err);
}

int docindex_swap_path(const docindex *ix, char *p, storh_err *err)
{
    size_t dl = strlen(ix->dir), el = strlen(ENTRIES_DIR);
    if (strncmp(p, ix->dir, dl) || strncmp(p + dl, ENTRIES_DIR, el) || p[dl + el] != '/')
        return storh_err_set(err, STORH_EIO, "Index path outside its entries: %s", p);
    char rest[PATH_MAX];
    snprintf(rest, sizeof rest, "%s", p + dl + el);
    return fsx_pathf(p, err, "%s%s%s", ix->dir, SWAP_DIR, rest);
}

/* One atomic exchange where the filesystem has it, so every reader sees the
 * old tree or the new one, whole; else (EINVAL: FUSE, NFS; EXDEV: an
 * overlayfs lower dir) the old tree removed and the new one renamed in, a
 * crash between the two leaving no entries until the next rebuild. Other
 * processes' entry caches see the move of entries/ (docindex_mem.c). When
 * the directory's fsync fails, the old tree stays at swap (the next build
 * clears it): after a crash either tree may stand, each whole. */
int docindex_swap_in(const docindex *ix, storh_err *err)
{
    char entries[PATH_MAX], swap[PATH_MAX];
    int rc = fsx_pathf(entries, err, "%s%s", ix->dir, ENTRIES_DIR);
    if (!rc)
        rc = fsx_pathf(swap, err, "%s%s", ix->dir, SWAP_DIR);
    if (rc)
        return rc;
    if (renameat2(AT_FDCWD, swap, AT_FDCWD, entries, RENAME_EXCHANGE) != 0) {
        if (errno != ENOENT && errno != EINVAL && errno != ENOSYS && errno != EXDEV)
            return storh_err_sys(err, errno, "Could not swap in the rebuilt %s", entries);
        if (errno != ENOENT && (rc = clear(entries, err)))
            return rc;
        if (rename(swap, entries) != 0)
            return storh_err_sys(err, errno, "Could not rename %s into place", swap);
    }
    fault_point("docindex.swapped");
    rc = fsx_fsync_dir(ix->dir, err);
    if (!rc)
        (void)clear(swap, NULL); /* a leftover is cleared by the next build */
    return rc;
}

void docindex_swap_drop(const docindex *ix)
{
    char swap[PATH_MAX];
    if (!fsx_pathf(swap, NULL, "%s%s", ix->dir, SWAP_DIR))
        (void)clear(swap, NULL);
}
