/* discover.h - finds the files an input's globs match.
 *
 * Patterns are shell globs per path segment (fnmatch: *, ?, [...]) plus `**`, which
 * matches zero or more directories at any depth. Symlinked files and directories are
 * followed (a directory reached twice on one path is a cycle and is not entered again);
 * a file reached through several patterns or links is reported once, under the first path
 * that found it. `exclude_files` regexes (PCRE2, JIT) are matched against the full path. */
#ifndef LF_DISCOVER_H
#define LF_DISCOVER_H

#include <stdint.h>
#include <sys/stat.h>

#include "logferry/config.h"
#include "logferry/err.h"

struct lf_discover;

/* Called once per regular file found, in path order. path and st are borrowed: valid
 * during the call. Return non-zero to stop the scan. */
typedef int lf_found_fn(void *arg, const char *path, const struct stat *st);

/* Returns a new discoverer for in (borrowed: valid while d lives) in *out; free with
 * lf_discover_free(). LF_ECONFIG if an exclude_files regex does not compile (eb says why). */
LF_MUST_CHECK enum lf_err lf_discover_new(const struct lf_input_conf *in, struct lf_discover **out,
                                          struct lf_errbuf *eb);

void lf_discover_free(struct lf_discover *d);

/* True if the last lf_discover_scan() could not list a directory that exists (out of file
 * descriptors, permission denied): files it did not report there may still exist. */
bool lf_discover_incomplete(const struct lf_discover *d);

/* Expands every pattern now and calls fn for each file found. now_ms (wall clock) is used
 * for ignore_older. Unreadable directories are skipped with a warning. LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_discover_scan(struct lf_discover *d, int64_t now_ms, lf_found_fn *fn,
                                           void *arg);

/* True if path matches pattern (the same rules as the scan, without touching the disk). */
bool lf_glob_match(const char *pattern, const char *path);

#endif
