/* netlib.c - loads libcurl, librdkafka and libssl on first use (see netlib_int.h).
 *
 * Each library is opened once, with RTLD_NOW so that a missing function shows at once and
 * not at the first batch, and RTLD_LOCAL so that its symbols stay out of the global scope.
 * It is never closed: its threads (librdkafka's) and handles may outlive any one output,
 * and a reload makes the same outputs again. */
#include "config.h"

#define LF_NETLIB_NO_REDIRECT 1 /* the tables are filled here by name */

#include "netlib_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Filled through memcpy() from dlsym()'s void *, which POSIX lets stand for a function. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers fit in void *");

struct lf_netlib_curl lf_netlib_curl;
struct lf_netlib_kafka lf_netlib_kafka;
struct lf_netlib_ssl lf_netlib_ssl;

struct slot {
    const char *name;
    size_t offset; /* of the pointer in the library's table */
};

#define CURL_SLOT(f)  { #f, offsetof(struct lf_netlib_curl, f) },
#define KAFKA_SLOT(f) { #f, offsetof(struct lf_netlib_kafka, f) },
#define SSL_SLOT(f)   { #f, offsetof(struct lf_netlib_ssl, f) },
static const struct slot curl_slots[] = { LF_NETLIB_CURL_FUNCS(CURL_SLOT) };
static const struct slot kafka_slots[] = { LF_NETLIB_KAFKA_FUNCS(KAFKA_SLOT) };
static const struct slot ssl_slots[] = { LF_NETLIB_SSL_FUNCS(SSL_SLOT) };
#undef CURL_SLOT
#undef KAFKA_SLOT
#undef SSL_SLOT

static const struct lib {
    const char *soname;
    const char *used_by; /* for the message */
    void *table;
    size_t table_size;
    const struct slot *slots;
    size_t n_slots;
} libs[LF_NETLIB_COUNT] = {
    [LF_NETLIB_CURL] = { LF_SONAME_CURL,
                         "the http, elasticsearch, loki, splunk_hec, otlp and s3 outputs and "
                         "kubernetes metadata",
                         &lf_netlib_curl, sizeof(lf_netlib_curl), curl_slots,
                         sizeof(curl_slots) / sizeof(curl_slots[0]) },
    [LF_NETLIB_KAFKA] = { LF_SONAME_RDKAFKA, "the kafka output", &lf_netlib_kafka,
                          sizeof(lf_netlib_kafka), kafka_slots,
                          sizeof(kafka_slots) / sizeof(kafka_slots[0]) },
    [LF_NETLIB_SSL] = { LF_SONAME_SSL, "the syslog output's tls and aws signing", &lf_netlib_ssl,
                        sizeof(lf_netlib_ssl), ssl_slots,
                        sizeof(ssl_slots) / sizeof(ssl_slots[0]) },
};

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static bool loaded[LF_NETLIB_COUNT];

void lf_netlib_preinit(void)
{
    /* Failing (out of memory) only leaves GnuTLS to initialise itself, as before. */
    (void)setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 0);
}

const char *lf_netlib_soname(enum lf_netlib lib)
{
    return libs[lib].soname;
}

/* Opens soname and fills lib's table, all or nothing. With load_mu held. */
static enum lf_err
load_locked(const struct lib *l, const char *soname, const char *who, struct lf_errbuf *eb)
{
    dlerror();
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *why = dlerror();
        return lf_fail(eb, LF_EIO, "%s: cannot load %s, needed by %s: %s", who, soname,
                       l->used_by, why != NULL ? why : "unknown error");
    }
    for (size_t i = 0; i < l->n_slots; i++) {
        dlerror();
        void *sym = dlsym(h, l->slots[i].name);
        if (sym == NULL) {
            const char *why = dlerror(); /* freed by dlclose(): said first */
            enum lf_err err =
                lf_fail(eb, LF_EIO, "%s: %s has no %s, needed by %s: %s", who, soname,
                        l->slots[i].name, l->used_by, why != NULL ? why : "a NULL symbol");
            memset(l->table, 0, l->table_size);
            dlclose(h);
            return err;
        }
        /* POSIX: a function's address from dlsym() converts to a function pointer. */
        memcpy((char *)l->table + l->slots[i].offset, &sym, sizeof(sym));
    }
    return LF_OK;
}

enum lf_err
lf_netlib__load_file(enum lf_netlib lib, const char *soname, const char *who, struct lf_errbuf *eb)
{
    if ((unsigned)lib >= LF_NETLIB_COUNT)
        return lf_fail(eb, LF_EINVAL, "%s: no such library", who);
    enum lf_err err = LF_OK;
    pthread_mutex_lock(&load_mu);
    if (!loaded[lib]) {
        err = load_locked(&libs[lib], soname, who, eb);
        loaded[lib] = err == LF_OK;
    }
    pthread_mutex_unlock(&load_mu);
    return err;
}

enum lf_err lf_netlib_load(enum lf_netlib lib, const char *who, struct lf_errbuf *eb)
{
    if ((unsigned)lib >= LF_NETLIB_COUNT)
        return lf_fail(eb, LF_EINVAL, "%s: no such library", who);
    return lf_netlib__load_file(lib, libs[lib].soname, who, eb);
}
