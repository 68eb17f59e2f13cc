/* utf8.h - UTF-8 validation shared by the reader, the encoder and the fuzzers. */
#ifndef LF_UTF8_H
#define LF_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* One UTF-8 character at p (n >= 1 bytes available): its length (1-4) if valid, 0 if
 * p[0..n) is a valid but incomplete start of one, -1 if invalid (overlong, surrogate,
 * above U+10FFFF, stray continuation byte). */
int lf_utf8_char(const unsigned char *p, size_t n);

/* True when p[0..n) is whole valid UTF-8 (n may be 0). */
bool lf_utf8_valid(const char *p, size_t n);

/* Length of the longest prefix of p[0..n) made of whole valid UTF-8 characters (an
 * incomplete character at the end is left out). Eight bytes a step while the text is ASCII. */
size_t lf_utf8_valid_len(const void *p, size_t n);

#endif
