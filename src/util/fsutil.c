/* fsutil.c - filesystem helpers (see fsutil.h). */
#include "config.h"

#include "logferry/fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int lf_mkdir_p(const char *dir, mode_t mode)
{
    if (dir[0] == '\0')
        return ENOENT; /* as mkdir("") says; the walk below starts after the first byte */
    char *p = strdup(dir);
    if (p == NULL)
        return ENOMEM;
    int e = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, mode) != 0 && errno != EEXIST) {
            e = errno;
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    if (e == 0) {
        struct stat st;
        if (stat(dir, &st) != 0)
            e = errno;
        else if (!S_ISDIR(st.st_mode))
            e = ENOTDIR;
    }
    return e;
}
