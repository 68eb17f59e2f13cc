/* netlib_int.h - libcurl, librdkafka and OpenSSL's libssl, loaded when an output needs them.
 *
 * logferry does not link these libraries. With their own dependencies they are some 30
 * shared objects: mapped and relocated at every start, they took 5.7 MiB of the 10.3 MiB a
 * one-file agent keeps resident, whether or not an output used them (docs/benchmarks.md).
 * lf_output_open() loads the one an output's type needs (lf_output_load_library(), the
 * one place that maps types to libraries) before the type's open; from then on the
 * library's functions are called through the pointers below.
 *
 * A file that calls them includes this header instead of the libraries' own. The macros at
 * its end turn every call into a call through a pointer, also the calls that the
 * libraries' own macros expand to (SSL_CTX_set_mode() is SSL_CTX_ctrl()), so the code reads
 * as the libraries document it. The price: libcurl's compile-time check of setopt argument
 * types is off, since it is made of macros with the same names.
 *
 * The lists name every function logferry calls; a call to one missing from them fails to
 * link, since nothing else provides it.
 *
 * The tables are process-wide, as the libraries are (docs/architecture.md says why this
 * is an exception to "no hidden globals"): each is written once, under a mutex, before the
 * output that calls it exists, and never changes after. */
#ifndef LF_NETLIB_INT_H
#define LF_NETLIB_INT_H

#define CURL_DISABLE_TYPECHECK 1

#include <curl/curl.h>
#include <librdkafka/rdkafka.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>

#include "logferry/err.h"

enum lf_netlib {
    LF_NETLIB_CURL,
    LF_NETLIB_KAFKA,
    LF_NETLIB_SSL,
    LF_NETLIB_COUNT
};

#define LF_NETLIB_CURL_FUNCS(X) \
    X(curl_easy_cleanup)        \
    X(curl_easy_escape)         \
    X(curl_easy_getinfo)        \
    X(curl_easy_init)           \
    X(curl_easy_perform)        \
    X(curl_easy_setopt)         \
    X(curl_easy_strerror)       \
    X(curl_free)                \
    X(curl_getdate)             \
    X(curl_global_cleanup)      \
    X(curl_global_init)         \
    X(curl_multi_add_handle)    \
    X(curl_multi_assign)        \
    X(curl_multi_cleanup)       \
    X(curl_multi_info_read)     \
    X(curl_multi_init)          \
    X(curl_multi_perform)       \
    X(curl_multi_poll)          \
    X(curl_multi_remove_handle) \
    X(curl_multi_setopt)        \
    X(curl_multi_socket_action) \
    X(curl_multi_strerror)      \
    X(curl_multi_wakeup)        \
    X(curl_share_cleanup)       \
    X(curl_share_init)          \
    X(curl_share_setopt)        \
    X(curl_slist_append)        \
    X(curl_slist_free_all)      \
    X(curl_url)                 \
    X(curl_url_cleanup)         \
    X(curl_url_get)             \
    X(curl_url_set)

#define LF_NETLIB_KAFKA_FUNCS(X)   \
    X(rd_kafka_conf_destroy)       \
    X(rd_kafka_conf_new)           \
    X(rd_kafka_conf_set)           \
    X(rd_kafka_conf_set_dr_msg_cb) \
    X(rd_kafka_conf_set_error_cb)  \
    X(rd_kafka_conf_set_log_cb)    \
    X(rd_kafka_conf_set_opaque)    \
    X(rd_kafka_destroy)            \
    X(rd_kafka_err2name)           \
    X(rd_kafka_err2str)            \
    X(rd_kafka_fatal_error)        \
    X(rd_kafka_flush)              \
    X(rd_kafka_last_error)         \
    X(rd_kafka_new)                \
    X(rd_kafka_opaque)             \
    X(rd_kafka_poll)               \
    X(rd_kafka_produce)            \
    X(rd_kafka_purge)              \
    X(rd_kafka_topic_destroy)      \
    X(rd_kafka_topic_name)         \
    X(rd_kafka_topic_new)

/* libssl's, and the few of libcrypto (which libssl brings along) that the syslog output
 * and the SigV4 signer (sigv4.c: SHA-256 whose state is a plain struct, copied without
 * allocating) call. */
#define LF_NETLIB_SSL_FUNCS(X)            \
    X(SSL_CTX_check_private_key)          \
    X(SSL_CTX_ctrl)                       \
    X(SSL_CTX_free)                       \
    X(SSL_CTX_load_verify_locations)      \
    X(SSL_CTX_new)                        \
    X(SSL_CTX_set_default_verify_paths)   \
    X(SSL_CTX_set_verify)                 \
    X(SSL_CTX_use_PrivateKey_file)        \
    X(SSL_CTX_use_certificate_chain_file) \
    X(SSL_connect)                        \
    X(SSL_ctrl)                           \
    X(SSL_free)                           \
    X(SSL_get0_param)                     \
    X(SSL_get_error)                      \
    X(SSL_get_verify_result)              \
    X(SSL_new)                            \
    X(SSL_read_ex)                        \
    X(SSL_set1_host)                      \
    X(SSL_set_fd)                         \
    X(SSL_shutdown)                       \
    X(SSL_write_ex)                       \
    X(TLS_client_method)                  \
    X(ERR_clear_error)                    \
    X(ERR_get_error)                      \
    X(ERR_peek_error)                     \
    X(ERR_reason_error_string)            \
    X(X509_VERIFY_PARAM_set1_ip_asc)      \
    X(X509_verify_cert_error_string)      \
    X(SHA256_Init)                        \
    X(SHA256_Update)                      \
    X(SHA256_Final)

#define LF_NETLIB_PTR(f) __typeof__(f) *f;
struct lf_netlib_curl {
    LF_NETLIB_CURL_FUNCS(LF_NETLIB_PTR)
};
struct lf_netlib_kafka {
    LF_NETLIB_KAFKA_FUNCS(LF_NETLIB_PTR)
};
/* OpenSSL 3 marks SHA256_Init() and its siblings deprecated (for EVP, whose contexts are
 * allocated); naming their types here is the only use of the declarations. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct lf_netlib_ssl {
    LF_NETLIB_SSL_FUNCS(LF_NETLIB_PTR)
};
#pragma GCC diagnostic pop
#undef LF_NETLIB_PTR

/* Filled by lf_netlib_load(); NULL pointers before. */
extern struct lf_netlib_curl lf_netlib_curl;
extern struct lf_netlib_kafka lf_netlib_kafka;
extern struct lf_netlib_ssl lf_netlib_ssl;

/* Loads lib and every function of its list, on the first call; later calls return LF_OK at
 * once. Any thread. who names what needs it, as its messages start ("output es",
 * "kubernetes"). LF_EIO with eb filled when the
 * library cannot be loaded or lacks a function ("output es: cannot load libcurl.so.4, needed
 * by the http, elasticsearch and loki outputs: libcurl.so.4: cannot open shared object
 * file: No such file or directory"); the table stays empty and a later call tries again. */
LF_MUST_CHECK enum lf_err lf_netlib_load(enum lf_netlib lib, const char *who, struct lf_errbuf *eb);

/* Sets, unless the environment has it already, what the libraries read from it when they
 * are loaded: GNUTLS_NO_IMPLICIT_INIT=1. libcurl (Debian's, built on OpenSSL) maps GnuTLS
 * through librtmp and libldap, for rtmp:// and ldap:// URLs that logferry never opens,
 * and GnuTLS initialises itself at load unless told not to (its crypto back-ends, the
 * system's priority file, PKCS#11 modules through p11-kit): 0.6 MiB resident for nothing.
 * Both call gnutls_global_init() themselves before they use it. Once, at the start of the
 * process, before any thread (setenv(3) is not safe beside getenv(3) on another thread). */
void lf_netlib_preinit(void);

/* The file lf_netlib_load() opens for lib: the soname configure found. */
const char *lf_netlib_soname(enum lf_netlib lib);

/* Tests: lf_netlib_load() from the file soname instead, and only if lib is not loaded yet. */
LF_MUST_CHECK enum lf_err
lf_netlib__load_file(enum lf_netlib lib, const char *soname, const char *who, struct lf_errbuf *eb);

#ifndef LF_NETLIB_NO_REDIRECT /* netlib.c, and tests that look at the tables */
/* Every call of a listed function goes through its pointer. <curl/curl.h> defines four of
 * them as macros of its own (the type checks, or plain pass-throughs without them). */
#undef curl_easy_getinfo
#undef curl_easy_setopt
#undef curl_multi_setopt
#undef curl_share_setopt
#define curl_easy_cleanup        (*lf_netlib_curl.curl_easy_cleanup)
#define curl_easy_escape         (*lf_netlib_curl.curl_easy_escape)
#define curl_easy_getinfo        (*lf_netlib_curl.curl_easy_getinfo)
#define curl_easy_init           (*lf_netlib_curl.curl_easy_init)
#define curl_easy_perform        (*lf_netlib_curl.curl_easy_perform)
#define curl_easy_setopt         (*lf_netlib_curl.curl_easy_setopt)
#define curl_easy_strerror       (*lf_netlib_curl.curl_easy_strerror)
#define curl_free                (*lf_netlib_curl.curl_free)
#define curl_getdate             (*lf_netlib_curl.curl_getdate)
#define curl_global_cleanup      (*lf_netlib_curl.curl_global_cleanup)
#define curl_global_init         (*lf_netlib_curl.curl_global_init)
#define curl_multi_add_handle    (*lf_netlib_curl.curl_multi_add_handle)
#define curl_multi_assign        (*lf_netlib_curl.curl_multi_assign)
#define curl_multi_cleanup       (*lf_netlib_curl.curl_multi_cleanup)
#define curl_multi_info_read     (*lf_netlib_curl.curl_multi_info_read)
#define curl_multi_init          (*lf_netlib_curl.curl_multi_init)
#define curl_multi_perform       (*lf_netlib_curl.curl_multi_perform)
#define curl_multi_poll          (*lf_netlib_curl.curl_multi_poll)
#define curl_multi_remove_handle (*lf_netlib_curl.curl_multi_remove_handle)
#define curl_multi_setopt        (*lf_netlib_curl.curl_multi_setopt)
#define curl_multi_socket_action (*lf_netlib_curl.curl_multi_socket_action)
#define curl_multi_strerror      (*lf_netlib_curl.curl_multi_strerror)
#define curl_multi_wakeup        (*lf_netlib_curl.curl_multi_wakeup)
#define curl_share_cleanup       (*lf_netlib_curl.curl_share_cleanup)
#define curl_share_init          (*lf_netlib_curl.curl_share_init)
#define curl_share_setopt        (*lf_netlib_curl.curl_share_setopt)
#define curl_slist_append        (*lf_netlib_curl.curl_slist_append)
#define curl_slist_free_all      (*lf_netlib_curl.curl_slist_free_all)
#define curl_url                 (*lf_netlib_curl.curl_url)
#define curl_url_cleanup         (*lf_netlib_curl.curl_url_cleanup)
#define curl_url_get             (*lf_netlib_curl.curl_url_get)
#define curl_url_set             (*lf_netlib_curl.curl_url_set)

#define rd_kafka_conf_destroy       (*lf_netlib_kafka.rd_kafka_conf_destroy)
#define rd_kafka_conf_new           (*lf_netlib_kafka.rd_kafka_conf_new)
#define rd_kafka_conf_set           (*lf_netlib_kafka.rd_kafka_conf_set)
#define rd_kafka_conf_set_dr_msg_cb (*lf_netlib_kafka.rd_kafka_conf_set_dr_msg_cb)
#define rd_kafka_conf_set_error_cb  (*lf_netlib_kafka.rd_kafka_conf_set_error_cb)
#define rd_kafka_conf_set_log_cb    (*lf_netlib_kafka.rd_kafka_conf_set_log_cb)
#define rd_kafka_conf_set_opaque    (*lf_netlib_kafka.rd_kafka_conf_set_opaque)
#define rd_kafka_destroy            (*lf_netlib_kafka.rd_kafka_destroy)
#define rd_kafka_err2name           (*lf_netlib_kafka.rd_kafka_err2name)
#define rd_kafka_err2str            (*lf_netlib_kafka.rd_kafka_err2str)
#define rd_kafka_fatal_error        (*lf_netlib_kafka.rd_kafka_fatal_error)
#define rd_kafka_flush              (*lf_netlib_kafka.rd_kafka_flush)
#define rd_kafka_last_error         (*lf_netlib_kafka.rd_kafka_last_error)
#define rd_kafka_new                (*lf_netlib_kafka.rd_kafka_new)
#define rd_kafka_opaque             (*lf_netlib_kafka.rd_kafka_opaque)
#define rd_kafka_poll               (*lf_netlib_kafka.rd_kafka_poll)
#define rd_kafka_produce            (*lf_netlib_kafka.rd_kafka_produce)
#define rd_kafka_purge              (*lf_netlib_kafka.rd_kafka_purge)
#define rd_kafka_topic_destroy      (*lf_netlib_kafka.rd_kafka_topic_destroy)
#define rd_kafka_topic_name         (*lf_netlib_kafka.rd_kafka_topic_name)
#define rd_kafka_topic_new          (*lf_netlib_kafka.rd_kafka_topic_new)

#define SSL_CTX_check_private_key          (*lf_netlib_ssl.SSL_CTX_check_private_key)
#define SSL_CTX_ctrl                       (*lf_netlib_ssl.SSL_CTX_ctrl)
#define SSL_CTX_free                       (*lf_netlib_ssl.SSL_CTX_free)
#define SSL_CTX_load_verify_locations      (*lf_netlib_ssl.SSL_CTX_load_verify_locations)
#define SSL_CTX_new                        (*lf_netlib_ssl.SSL_CTX_new)
#define SSL_CTX_set_default_verify_paths   (*lf_netlib_ssl.SSL_CTX_set_default_verify_paths)
#define SSL_CTX_set_verify                 (*lf_netlib_ssl.SSL_CTX_set_verify)
#define SSL_CTX_use_PrivateKey_file        (*lf_netlib_ssl.SSL_CTX_use_PrivateKey_file)
#define SSL_CTX_use_certificate_chain_file (*lf_netlib_ssl.SSL_CTX_use_certificate_chain_file)
#define SSL_connect                        (*lf_netlib_ssl.SSL_connect)
#define SSL_ctrl                           (*lf_netlib_ssl.SSL_ctrl)
#define SSL_free                           (*lf_netlib_ssl.SSL_free)
#define SSL_get0_param                     (*lf_netlib_ssl.SSL_get0_param)
#define SSL_get_error                      (*lf_netlib_ssl.SSL_get_error)
#define SSL_get_verify_result              (*lf_netlib_ssl.SSL_get_verify_result)
#define SSL_new                            (*lf_netlib_ssl.SSL_new)
#define SSL_read_ex                        (*lf_netlib_ssl.SSL_read_ex)
#define SSL_set1_host                      (*lf_netlib_ssl.SSL_set1_host)
#define SSL_set_fd                         (*lf_netlib_ssl.SSL_set_fd)
#define SSL_shutdown                       (*lf_netlib_ssl.SSL_shutdown)
#define SSL_write_ex                       (*lf_netlib_ssl.SSL_write_ex)
#define TLS_client_method                  (*lf_netlib_ssl.TLS_client_method)
#define ERR_clear_error                    (*lf_netlib_ssl.ERR_clear_error)
#define ERR_get_error                      (*lf_netlib_ssl.ERR_get_error)
#define ERR_peek_error                     (*lf_netlib_ssl.ERR_peek_error)
#define ERR_reason_error_string            (*lf_netlib_ssl.ERR_reason_error_string)
#define X509_VERIFY_PARAM_set1_ip_asc      (*lf_netlib_ssl.X509_VERIFY_PARAM_set1_ip_asc)
#define X509_verify_cert_error_string      (*lf_netlib_ssl.X509_verify_cert_error_string)
#define SHA256_Init                        (*lf_netlib_ssl.SHA256_Init)
#define SHA256_Update                      (*lf_netlib_ssl.SHA256_Update)
#define SHA256_Final                       (*lf_netlib_ssl.SHA256_Final)
#endif

#endif
