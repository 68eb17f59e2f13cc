/* output_errors.c - the last warning or error each output logged, for /status.
 *
 * An output says what went wrong in its own words only in the log ("output es: POST
 * http://...: HTTP 503: overloaded; will retry"); its lane learns just an error code. The
 * daemon sets lf_output_errors_hook() as the log hook, which keeps, per output name, the
 * latest record of component "output" that starts "output NAME: ", with its wall-clock
 * time. The table is process-wide, fixed in size (names past OUTPUT_ERROR_SLOTS are not
 * kept) and guarded by its mutex: the hook runs on whichever thread logs, /status reads it
 * on the loop thread. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "agent_int.h"

#define OUTPUT_ERROR_SLOTS 64

static struct {
    char name[128];
    char msg[512];
    int64_t at_ms;
} slots[OUTPUT_ERROR_SLOTS];
static size_t n_slots;
static uv_mutex_t mu;
static uv_once_t mu_once = UV_ONCE_INIT;

static void mu_init(void)
{
    if (uv_mutex_init(&mu) != 0)
        abort();
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void lf_output_errors_hook(enum lf_log_level level, const char *component, const char *msg)
{
    (void)level;
    if (strcmp(component, "output") != 0 || strncmp(msg, "output ", 7) != 0)
        return;
    const char *name = msg + 7;
    const char *colon = strstr(name, ": ");
    size_t len = colon != NULL ? (size_t)(colon - name) : 0;
    if (len == 0 || len >= sizeof(slots[0].name))
        return;
    uv_once(&mu_once, mu_init);
    uv_mutex_lock(&mu);
    size_t i = 0;
    while (i < n_slots && (strncmp(slots[i].name, name, len) != 0 || slots[i].name[len] != '\0'))
        i++;
    if (i == n_slots && n_slots < OUTPUT_ERROR_SLOTS) {
        memcpy(slots[i].name, name, len);
        slots[i].name[len] = '\0';
        n_slots++;
    }
    if (i < n_slots) {
        snprintf(slots[i].msg, sizeof(slots[i].msg), "%s", colon + 2);
        slots[i].at_ms = wall_ms();
    }
    uv_mutex_unlock(&mu);
}

bool lf_output_last_error(const char *name, int64_t since_ms, char *out, size_t len)
{
    bool found = false;
    uv_once(&mu_once, mu_init);
    uv_mutex_lock(&mu);
    for (size_t i = 0; i < n_slots && !found; i++) {
        if (strcmp(slots[i].name, name) == 0 && slots[i].at_ms >= since_ms) {
            snprintf(out, len, "%s", slots[i].msg);
            found = true;
        }
    }
    uv_mutex_unlock(&mu);
    return found;
}
