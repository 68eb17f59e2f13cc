/* fuzz_registry.c - libFuzzer target for loading the registry file.
 *
 * Each input is tried three times: as the whole registry file; with a correct end line
 * (CRC-32 of the input) appended, so that mutations reach the record parser instead of
 * stopping at the checksum; and as the journal (registry.log) beside a valid one-entry
 * file, with the header that names it and each line given its correct checksum, so that
 * mutations reach the replay of records: once as format 1 (file and journal without
 * stream ids), once as format 2. Invariants: opening returns LF_OK or LF_EIO (a
 * journal never makes it fail) and never crashes; whatever loads can be flushed and loads
 * again with the same number of entries. */
#include "config.h"

#include "logferry/registry.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)           \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static uint32_t crc32_bitwise(const uint8_t *b, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void write_file(const char *path, const uint8_t *p, size_t n, const char *tail)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(p, 1, n, f) == n);
    CHECK(fputs(tail, f) >= 0);
    CHECK(fclose(f) == 0);
}

static void try_load(const char *dir, bool must_load)
{
    struct lf_errbuf eb = { "" };
    struct lf_registry *r = NULL;
    enum lf_err err = lf_registry_open(dir, &r, &eb);
    CHECK(err == LF_OK || (err == LF_EIO && !must_load));
    if (err) {
        CHECK(r == NULL && eb.msg[0] != '\0');
        return;
    }
    /* Round trip: make it dirty without changing what it holds, flush, load again. */
    size_t count = lf_registry_count(r);
    struct lf_file_id id = { 1, 1, 0, 0 };
    bool had = lf_registry_find(r, "fuzz", 1, 1) != NULL;
    CHECK(lf_registry_set(r, "fuzz", &id, 0, 0, "/fuzz", 0) == LF_OK);
    lf_registry_remove(r, "fuzz", 1, 1);
    CHECK(lf_registry_flush(r, &eb) == LF_OK);
    lf_registry_free(r);
    CHECK(lf_registry_open(dir, &r, &eb) == LF_OK);
    CHECK(lf_registry_count(r) == count - had);
    lf_registry_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[64]; /* one temp dir for the whole run */
    static char path[96];
    static char journal[96];
    if (dir[0] == '\0') {
        snprintf(dir, sizeof(dir), "/tmp/fuzz_registry.XXXXXX");
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/registry", dir);
        snprintf(journal, sizeof(journal), "%s/registry.log", dir);
    }
    unlink(journal);
    write_file(path, data, size, "");
    try_load(dir, false);
    char tail[16];
    snprintf(tail, sizeof(tail), "end %08" PRIx32 "\n", crc32_bitwise(data, size));
    write_file(path, data, size, tail);
    try_load(dir, false);

    static const char *const bases[2] = {
        "logferry-registry 1 1\napp\t1\t2\t0\t0000000000000000\t5\t0\t/a\n",
        "logferry-registry 2 1\napp\t1\t2\t0\t0000000000000000\t5\t0\t00000000000000ab\t/a\n",
    };
    for (int v = 0; v < 2; v++) {
        const char *base = bases[v];
        uint32_t base_crc = crc32_bitwise((const uint8_t *)base, strlen(base));
        snprintf(tail, sizeof(tail), "end %08" PRIx32 "\n", base_crc);
        write_file(path, (const uint8_t *)base, strlen(base), tail);
        FILE *f = fopen(journal, "wb");
        CHECK(f != NULL);
        CHECK(fprintf(f, "logferry-registry-log %d %08" PRIx32 "\n", v + 1, base_crc) > 0);
        for (size_t at = 0; at < size;) {
            const uint8_t *nl = memchr(data + at, '\n', size - at);
            size_t len = (nl != NULL ? (size_t)(nl - data) : size) - at;
            CHECK(fwrite(data + at, 1, len, f) == len);
            CHECK(fprintf(f, "\t%08" PRIx32 "\n", crc32_bitwise(data + at, len)) > 0);
            at += len + 1;
        }
        CHECK(fclose(f) == 0);
        try_load(dir, true);
    }
    return 0;
}
