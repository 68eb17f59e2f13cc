/* roots.h - allowed_roots: a file an input reads must really lie inside one of its
 * allowed directories.
 *
 * Globs follow symlinks (discover.h), so without this check `logs/evil.log -> /etc/shadow`
 * or `logs/dir -> /outside/` would be read and shipped by an agent that often runs as root:
 * anyone who can write in a log directory could pick what it sends. The check looks at what
 * was actually opened, never at the path before the open: fstat(2) for the file type and
 * the kernel's own name for the descriptor (/proc/self/fd/N), so a link swapped between a
 * look and the open cannot slip through, nor can a link in any directory along the path.
 *
 *   open(path, O_NONBLOCK) ──► lf_roots_check(in, fd) ──► LF_OK: read it
 *                                                    └──► LF_EREJECTED: close, warn once
 *
 * Every log file is opened in one place, lf_tail__open() (src/input/harvester.c), for the
 * daemon, the backfill and --preview. */
#ifndef LF_ROOTS_H
#define LF_ROOTS_H

#include <sys/stat.h>

#include "logferry/config.h"
#include "logferry/err.h"

/* Checks the file open as fd for input in (borrowed). LF_OK if it is a regular file whose
 * real path lies inside one of in->allowed_roots (each root itself resolved now, so a root
 * reached through a link counts as its target); LF_EREJECTED otherwise, with eb saying why
 * (the kind of file, or its real path); LF_EIO if the descriptor's path cannot be learnt.
 * Allocates nothing; any thread. */
LF_MUST_CHECK enum lf_err lf_roots_check(const struct lf_input_conf *in, int fd,
                                         struct lf_errbuf *eb);

/* LF_OK if fd is open on a regular file; LF_EREJECTED (eb: what it is instead) for a FIFO,
 * device, directory or socket, which would block a reader or never end; LF_EIO if fstat
 * fails. For a path a person named (--preview), where allowed_roots do not apply. */
LF_MUST_CHECK enum lf_err lf_roots_check_regular(int fd, struct lf_errbuf *eb);

/* "a directory", "a FIFO", ... for a message about a file of this mode that is not a
 * regular file. The string is static. */
const char *lf_roots_kind_of(mode_t mode);

#endif
