/* fault: crash points and injected failures for fault tests.
 * fault_point(name) ends the process at once (_exit(86), no cleanup, like a
 * power cut for everything not yet fsynced) when the environment variable
 * STORH_FAULT equals name, or reaches it for the Nth time when STORH_FAULT
 * is name@N. fault_fails(op, target) is true when STORH_FAULT_FAIL equals
 * "op:target" (e.g. "fsync:events": every fsync of the group commit of the
 * store named events reports EIO). */
#ifndef STORH_FAULT_H
#define STORH_FAULT_H

#include <stdbool.h>

void fault_point(const char *name);
bool fault_fails(const char *op, const char *target);

#endif
