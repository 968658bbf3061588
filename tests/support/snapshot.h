/* snapshot: a text fingerprint of a storage root (every regular file's path,
 * size and xxh64, sorted), to prove that a failed request changed nothing.
 * Writer markers and lock files are left out: they are process bookkeeping,
 * not stored data. Caller frees the string. */
#ifndef STORHD_TEST_SNAPSHOT_H
#define STORHD_TEST_SNAPSHOT_H

char *snapshot_tree(const char *root);

#endif
