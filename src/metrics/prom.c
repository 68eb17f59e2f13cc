/* prom.c - the Prometheus text exposition format (0.0.4) writer.
 *
 *   # HELP logferry_events_read_total Events read from files.
 *   # TYPE logferry_events_read_total counter
 *   logferry_events_read_total{input="app"} 42
 *
 * Names are checked, not escaped: a bad name is a programming error (LF_EINVAL). HELP text
 * escapes backslash and newline; label values escape backslash, double quote and newline. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "logferry/metrics.h"

static bool name_ok(const char *name, bool colon_ok)
{
    if (name == NULL || name[0] == '\0' || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (const char *p = name; *p != '\0'; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (colon_ok && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

static enum lf_err append_cstr(struct lf_buf *out, const char *s)
{
    return lf_buf_append(out, s, strlen(s));
}

/* Appends s with backslash and newline escaped, and double quote too when quote is set. */
static enum lf_err append_escaped(struct lf_buf *out, const char *s, bool quote)
{
    const char *run = s;
    for (const char *p = s;; p++) {
        const char *esc = NULL;
        if (*p == '\\')
            esc = "\\\\";
        else if (*p == '\n')
            esc = "\\n";
        else if (*p == '"' && quote)
            esc = "\\\"";
        else if (*p != '\0')
            continue;
        enum lf_err err = lf_buf_append(out, run, (size_t)(p - run));
        if (err)
            return err;
        if (esc == NULL)
            return LF_OK;
        err = lf_buf_append(out, esc, 2);
        if (err)
            return err;
        run = p + 1;
    }
}

enum lf_err lf_prom_family(struct lf_buf *out, const char *name, const char *type, const char *help)
{
    if (!name_ok(name, true) || type == NULL ||
        (strcmp(type, "counter") != 0 && strcmp(type, "gauge") != 0 &&
         strcmp(type, "histogram") != 0))
        return LF_EINVAL;
    enum lf_err err = append_cstr(out, "# HELP ");
    if (!err)
        err = append_cstr(out, name);
    if (!err)
        err = lf_buf_append(out, " ", 1);
    if (!err && help != NULL)
        err = append_escaped(out, help, false);
    if (!err)
        err = append_cstr(out, "\n# TYPE ");
    if (!err)
        err = append_cstr(out, name);
    if (!err)
        err = lf_buf_append(out, " ", 1);
    if (!err)
        err = append_cstr(out, type);
    if (!err)
        err = lf_buf_append(out, "\n", 1);
    return err;
}

static enum lf_err append_labels(struct lf_buf *out, const char *const *labels)
{
    for (size_t i = 0; labels[i] != NULL; i += 2) {
        if (!name_ok(labels[i], false) || labels[i + 1] == NULL)
            return LF_EINVAL;
        enum lf_err err = lf_buf_append(out, i == 0 ? "{" : ",", 1);
        if (!err)
            err = append_cstr(out, labels[i]);
        if (!err)
            err = lf_buf_append(out, "=\"", 2);
        if (!err)
            err = append_escaped(out, labels[i + 1], true);
        if (!err)
            err = lf_buf_append(out, "\"", 1);
        if (err)
            return err;
    }
    if (labels[0] == NULL)
        return LF_OK;
    return lf_buf_append(out, "}", 1);
}

/* Appends a sample's name and labels: everything but its value. */
static enum lf_err sample_head(struct lf_buf *out, const char *name, const char *const *labels)
{
    if (!name_ok(name, true))
        return LF_EINVAL;
    enum lf_err err = append_cstr(out, name);
    if (!err && labels != NULL)
        err = append_labels(out, labels);
    return err;
}

enum lf_err
lf_prom_sample(struct lf_buf *out, const char *name, const char *const *labels, uint64_t value)
{
    enum lf_err err = sample_head(out, name, labels);
    if (err)
        return err;
    char num[32];
    int n = snprintf(num, sizeof(num), " %" PRIu64 "\n", value);
    return lf_buf_append(out, num, (size_t)n);
}

enum lf_err lf_prom_sample_double(struct lf_buf *out, const char *name,
                                  const char *const *labels, double value)
{
    enum lf_err err = sample_head(out, name, labels);
    if (err)
        return err;
    char num[48];
    int n = snprintf(num, sizeof(num), " %.9g\n", value);
    return lf_buf_append(out, num, (size_t)n);
}
