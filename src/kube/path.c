/* path.c - a container log file's pod, namespace, container and id, from its name.
 *
 * The kubelet links each container's log as
 * /var/log/containers/<pod>_<namespace>_<container>-<id>.log; the names are DNS-1123
 * (lower-case letters, digits, '-' and '.'), the id 64 hex digits. Pure: no state. */
#include "config.h"

#include <string.h>

#include "logferry/kube.h"

/* True when s is a non-empty run of bytes from set. */
static bool all_of(struct lf_str s, const char *set)
{
    if (s.len == 0)
        return false;
    for (size_t i = 0; i < s.len; i++) {
        if (s.ptr[i] == '\0' || strchr(set, s.ptr[i]) == NULL)
            return false;
    }
    return true;
}

/* The suffix match lets a host's /var/log mounted elsewhere (/host/var/log) work too. */
bool lf_kube_names_from_path(const char *path, struct lf_kube_names *k)
{
    static const char dir[] = "/var/log/containers/";
    const char *base = strrchr(path, '/');
    if (base == NULL)
        return false;
    base++;
    size_t dlen = (size_t)(base - path);
    size_t blen = strlen(base);
    if (dlen < sizeof(dir) - 1 || memcmp(base - (sizeof(dir) - 1), dir, sizeof(dir) - 1) != 0 ||
        blen < 4 || memcmp(base + blen - 4, ".log", 4) != 0)
        return false;
    struct lf_str rest = lf_str_make(base, blen - 4);
    const char *u1 = memchr(rest.ptr, '_', rest.len);
    const char *u2 = u1 != NULL ? memchr(u1 + 1, '_', (size_t)(rest.ptr + rest.len - u1 - 1))
                                : NULL;
    if (u2 == NULL)
        return false;
    const char *cend = rest.ptr + rest.len;
    const char *dash = cend;
    while (dash > u2 && *dash != '-')
        dash--;
    if (dash == u2)
        return false;
    k->pod = lf_str_make(rest.ptr, (size_t)(u1 - rest.ptr));
    k->ns = lf_str_make(u1 + 1, (size_t)(u2 - u1 - 1));
    k->container = lf_str_make(u2 + 1, (size_t)(dash - u2 - 1));
    k->id = lf_str_make(dash + 1, (size_t)(cend - dash - 1));
    static const char name_set[] = "abcdefghijklmnopqrstuvwxyz0123456789-.";
    return all_of(k->pod, name_set) && all_of(k->ns, name_set) &&
           all_of(k->container, name_set) && all_of(k->id, "0123456789abcdef");
}
