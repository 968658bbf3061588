/* workdir: the trial runner's scratch under --out/work: each trial's
 * storage root (root-N) and its disk-probe directory (root-N-disk), named
 * here, and removed together once the run's trials are over, so that no
 * trial measures the inodes an earlier one freed. */
#ifndef STORHD_TRIAL_WORKDIR_H
#define STORHD_TRIAL_WORKDIR_H

#include <stddef.h>

/* Trial n's storage root and disk-probe directory, into root and disk
 * (cap bytes each). */
void workdir_paths(const char *work, int n, char *root, char *disk, size_t cap);
/* rm -rf dir. */
void workdir_remove(const char *dir);
/* Removes the roots and probe directories of trials 1..total, then syncs the
 * filesystem: on ext4 without a journal the allocator skips, at each create
 * near them, the inodes freed in the last 60 s (6 min while their table
 * block is dirty), so freeing them just before a trial slowed its creates. */
void workdir_remove_all(const char *work, int total);

#endif
