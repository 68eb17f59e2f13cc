/* watchdog.c - the process-wide table of thread liveness stamps (see watchdog.h).
 *
 * A slot is free (state 0), being named (1) or in use (2); a thread claims a free one with a
 * compare-and-swap, writes its name and then publishes it. Stamps are monotonic milliseconds
 * (uv_hrtime), 0 meaning idle. The table belongs to no one: each slot to the thread that
 * entered it, until it leaves. Any thread. */
#include "config.h"

#define LF_LOG_COMPONENT "watchdog"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <uv.h>

#include "logferry/log.h"
#include "logferry/watchdog.h"

enum { SLOT_FREE, SLOT_NAMING, SLOT_USED };

struct slot {
    _Atomic int state;
    _Atomic uint64_t stamp_ms; /* last sign of work; 0: idle */
    char name[48];
};

static struct slot slots[LF_WATCHDOG_SLOTS];
static atomic_bool full_said;
static _Thread_local int mine = -1; /* the calling thread's slot, or -1 */

/* Never 0, so that a stamp is never mistaken for idle. */
static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u + 1;
}

bool lf_watchdog_enter(const char *name)
{
    for (int i = 0; i < LF_WATCHDOG_SLOTS; i++) {
        int expect = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expect, SLOT_NAMING))
            continue;
        snprintf(slots[i].name, sizeof(slots[i].name), "%s", name);
        atomic_store(&slots[i].stamp_ms, now_ms());
        atomic_store(&slots[i].state, SLOT_USED);
        mine = i;
        return true;
    }
    if (!atomic_exchange(&full_said, true))
        lf_warn("more than %d threads: %s and later ones are not watched for /healthz",
                LF_WATCHDOG_SLOTS, name);
    return false;
}

void lf_watchdog_stamp(void)
{
    if (mine >= 0)
        atomic_store_explicit(&slots[mine].stamp_ms, now_ms(), memory_order_relaxed);
}

void lf_watchdog_idle(void)
{
    if (mine >= 0)
        atomic_store_explicit(&slots[mine].stamp_ms, 0, memory_order_relaxed);
}

void lf_watchdog_leave(void)
{
    if (mine >= 0)
        atomic_store(&slots[mine].state, SLOT_FREE);
    mine = -1;
}

bool lf_watchdog_stuck(uint64_t deadline_ms, char *why, size_t len)
{
    uint64_t now = now_ms();
    uint64_t worst = 0;
    for (int i = 0; i < LF_WATCHDOG_SLOTS; i++) {
        if (atomic_load(&slots[i].state) != SLOT_USED)
            continue;
        uint64_t stamp = atomic_load_explicit(&slots[i].stamp_ms, memory_order_relaxed);
        if (stamp == 0 || stamp > now || now - stamp <= deadline_ms || now - stamp <= worst)
            continue;
        worst = now - stamp;
        snprintf(why, len, "%s thread stuck for %" PRIu64 " s", slots[i].name, worst / 1000);
    }
    return worst > 0;
}
