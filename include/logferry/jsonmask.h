/* jsonmask.h - which bytes lf_json_escape() may change, for scanners that look ahead.
 *
 * The escaper (src/event/json.c) and the stages' scanners (src/stage/stage_int.h) test
 * text for the same bytes: control characters, '"', '\\' and 0xE2 (the lead byte of
 * U+2028 and U+2029). A scanner that finds none lets the encoder copy the text as it is.
 * Both take the test from here, so they cannot drift apart. */
#ifndef LF_JSONMASK_H
#define LF_JSONMASK_H

#include <stdbool.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#ifdef __SSE2__
/* Bit i set where byte i of v is one lf_json_escape() may change. */
static inline unsigned lf_json_special_mask(__m128i v)
{
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
    __m128i q = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i bs = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
    __m128i e2 = _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xe2));
    return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(ctl, q), _mm_or_si128(bs, e2)));
}
#endif

/* The same test for one byte. */
static inline bool lf_json_special_byte(char c)
{
    unsigned char u = (unsigned char)c;
    return u < 0x20 || u == '"' || u == '\\' || u == 0xe2;
}

#endif
