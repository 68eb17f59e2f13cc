/* watchdog.h - liveness stamps of the agent's long-lived threads, for /healthz.
 *
 * Each long-lived thread (the tail thread and its readers, each output's lane, the registry
 * writer, the preparer, the spool's writer and feeder, the Kubernetes watcher) takes a
 * slot with lf_watchdog_enter() and stamps it, with one atomic store and no lock, whenever it
 * does work. Before a wait that may last for ever (nothing to do, or waiting for the outputs
 * to make room in the queue) it calls lf_watchdog_idle(): an idle thread is never stuck.
 * The slot is the calling thread's (thread-local), so code deep in a call (the queue's
 * producer wait) marks whichever thread runs it; on a thread that is not watched every
 * call but lf_watchdog_enter() and lf_watchdog_stuck() is a no-op. A thread whose last stamp is older than the deadline, and
 * that is not idle, is stuck (blocked in a write, a lock, a system call). The slots are one
 * process-wide table; /healthz reads it with lf_watchdog_stuck(). Any thread. */
#ifndef LF_WATCHDOG_H
#define LF_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At most this many threads are watched at once; more are not watched (and say so once). */
#define LF_WATCHDOG_SLOTS 128

/* Gives the calling thread a slot named name ("tail", "output es"; copied, cut at 47 bytes),
 * stamped now. False (and the thread is not watched) when the table is full. */
bool lf_watchdog_enter(const char *name);

/* The calling thread is working now. Lock-free. */
void lf_watchdog_stamp(void);

/* The calling thread is about to wait, as long as it takes, for something that is not its
 * own doing; the next lf_watchdog_stamp() ends it. */
void lf_watchdog_idle(void);

/* Frees the calling thread's slot; it ends. */
void lf_watchdog_leave(void);

/* The thread stuck longest: if one has not stamped for more than deadline_ms and is not idle,
 * writes "NAME thread stuck for N s" into why (len bytes) and returns true. Any thread. */
bool lf_watchdog_stuck(uint64_t deadline_ms, char *why, size_t len);

#endif
