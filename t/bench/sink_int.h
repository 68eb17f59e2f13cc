/* sink_int.h - what the output benchmarks' sink (t/bench/sink.c, the server) shares with
 * t/bench/sink_msg.c (the messages in bodies and frames). One thread: the sink's loop. */
#ifndef LF_SINK_INT_H
#define LF_SINK_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>
#include <zstd.h>

#define SINK_MAX_KEYS       8
#define SINK_HASH_SEED      0x6c6f67666572727aULL /* sink_hash()'s start */
#define SINK_MAX_BODY_BYTES (1ULL << 32) /* a body (or a decompressed one) larger is refused */

/* A growable byte buffer; len bytes used of cap. Kept (not freed) between uses. */
struct buf {
    char *ptr;
    size_t len;
    size_t cap;
};

#define SINK_PENDING 32 /* messages whose hashing waits for a flush */

/* What a body held: its messages' count, sum of their sink_hash() (wrapping), bytes.
 * sum is complete only after sink_tally_flush(). */
struct tally {
    uint64_t lines;
    uint64_t sum;
    uint64_t bytes;
    size_t n_pending;
    const char *pending[SINK_PENDING]; /* borrowed: the bytes must stay until the flush */
    size_t pending_len[SINK_PENDING];
    size_t stage_len;
    char stage[8192]; /* copies of messages whose own memory is about to be reused */
};

/* What finding messages needs, made once and reused for every body. */
struct sink_msgs {
    const char *keys[SINK_MAX_KEYS]; /* --keys, borrowed from argv */
    size_t key_len[SINK_MAX_KEYS];
    size_t n_keys;
    uint64_t next_id; /* _id of bulk items whose action had none, upload ids */
    struct buf dec;   /* a decompressed body */
    struct buf str;   /* a JSON string unescaped */
    struct buf inner; /* a JSON text held in a JSON string (a Loki line); a _bulk answer */
    struct buf resp;  /* the items of a _bulk answer; an S3 answer */
    z_stream z;
    ZSTD_DCtx *zd;
};

/* -1: out of memory (or over SINK_MAX_BODY_BYTES); the buffer is unchanged. */
int sink_buf_reserve(struct buf *b, size_t more);
int sink_buf_add(struct buf *b, const void *p, size_t n);
int sink_buf_vprintf(struct buf *b, const char *fmt, va_list ap);
int sink_buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sink_buf_release(struct buf *b);

/* The 64-bit hash of one message: what --hash, /__stats and a harness in another language
 * compute alike (see sink_msg.c for the exact steps). */
uint64_t sink_hash(const char *p, size_t n);
/* A message whose bytes stay where they are until sink_tally_flush(t): hashed later, with
 * others. */
void sink_tally_add(struct tally *t, const char *p, size_t n);
/* A message counted and hashed at once (its bytes may change right after). */
void sink_tally_add_now(struct tally *t, const char *p, size_t n);
/* A message in memory about to be reused: copied aside to be hashed later, or hashed now
 * when long. */
void sink_tally_add_copy(struct tally *t, const char *p, size_t n);
/* Hashes what waits: t->sum is then complete. */
void sink_tally_flush(struct tally *t);

/* 0, or -1 when zlib or zstd cannot be set up. */
int sink_msgs_init(struct sink_msgs *m);
/* list: comma-separated names (kept: borrowed until the end). -1: none, or too many. */
int sink_msgs_set_keys(struct sink_msgs *m, char *list);
void sink_msgs_release(struct sink_msgs *m);

/* The body decoded as encoding says ("" or identity: as it is) into *out (borrowed: valid
 * until the next decode). -1: an unknown encoding, or bytes that do not decode. */
int sink_decode(struct sink_msgs *m,
                const char *encoding,
                const char *p,
                size_t n,
                const char **out,
                size_t *out_len);

/* Each adds the messages of a (decoded) body to t; -1 when some part of it was not
 * understood (t then holds a part of the body's messages: the caller drops it). */
int sink_text_lines(struct sink_msgs *m, const char *p, size_t n, struct tally *t);
int sink_generic_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t);
/* also leaves the answer's items, a JSON array, in m->resp */
int sink_bulk_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t);
int sink_loki_body(struct sink_msgs *m, const char *p, size_t n, struct tally *t);
int sink_otlp_json(struct sink_msgs *m, const char *p, size_t n, struct tally *t);
int sink_otlp_pb(const char *p, size_t n, struct tally *t);
/* One syslog message, a frame's bytes: its MSG. */
int sink_syslog_msg(const char *p, const char *e, struct tally *t);

#endif
