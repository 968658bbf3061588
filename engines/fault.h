/* fault: crash points and injected failures for fault tests.
 * fault_point(name) ends the process at once (_exit(86), no cleanup, like a
 * power cut for everything not yet fsynced) when the environment variable
 * STORH_FAULT equals name, or reaches it for the Nth time when STORH_FAULT
 * is name@N. fault_fails(op, target) is true when STORH_FAULT_FAIL equals
 * "op:target" (e.g. "fsync:events": every fsync of the group commit of the
 * store named events reports EIO), or only the Nth time it is asked with
 * "op:target@N". The ops: fsync (group commits), bulksync (a documents
 * bulk's commit record's directory sync), stagesync (a queue batch's
 * stage's), logsync (a repair's rewrite of queue.log or of a log segment),
 * manifest (a log's manifest write, as a full disk); the target is the
 * store's name, or its directory (whose last component is matched). */
#ifndef STORH_FAULT_H
#define STORH_FAULT_H

#include <stdbool.h>

void fault_point(const char *name);
bool fault_fails(const char *op, const char *target);

#endif
