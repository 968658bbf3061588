/* diskpub: the disk's per-publish limit, measured by the trial runner next
 * to a trial: one record after the other, create a temp file, write 1 KiB,
 * fsync it, rename it into place and fsync the directory (what a DocStore
 * write cost before group commit, and what PHP storh pays per record). */
#ifndef STORHD_TRIAL_DISKPUB_H
#define STORHD_TRIAL_DISKPUB_H

/* Publishes into dir (created, left with its files: the caller removes it
 * when freeing inodes no longer slows a measurement) for about seconds; the
 * rate in publishes per second, or -1 with msg on a failure. */
double diskpub_measure(const char *dir, double seconds, char *msg, unsigned long cap);

#endif
