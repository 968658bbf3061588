/* fault: crash points for fault tests. fault_point(name) ends the process
 * at once (_exit(86), no cleanup, like a power cut for everything not yet
 * fsynced) when the environment variable STORH_FAULT equals name, or
 * reaches it for the Nth time when STORH_FAULT is name@N. */
#ifndef STORH_FAULT_H
#define STORH_FAULT_H

void fault_point(const char *name);

#endif
