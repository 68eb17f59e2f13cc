/* fsutil.h - small filesystem helpers several modules share. */
#ifndef LF_FSUTIL_H
#define LF_FSUTIL_H

#include <sys/types.h>

/* mkdir -p: creates dir and its missing parents with mode; existing directories are fine.
 * Returns 0, or the errno value of the step that failed (ENOTDIR if dir is a file, ENOENT
 * for ""). */
int lf_mkdir_p(const char *dir, mode_t mode);

#endif
