/* check_timestamp.c - the timestamp stage and its time formats: a table of values in every
 * named format and layout directive (DST gaps and overlaps in Europe/Berlin and
 * America/New_York, leap days, year inference across New Year, the 1677/2262 limits,
 * malformed, truncated and invalid bytes), the stage on events (dotted paths, removal,
 * errors), config errors, and no allocation per event in steady state.
 *
 * The expected instants were computed with Python's zoneinfo (datetime(..., tzinfo=
 * ZoneInfo(zone)).timestamp(), fold=0: a gap time shifts forward, an overlap time takes
 * the earlier instant) and written into the table, not derived from the code under test. */
#include "config.h"

#include <unistd.h>

#include "logferry/timefmt.h"
#include "logferry/tz.h"
#include "stage_fixture.h"

/* ---- the formats ---- */

static const struct time_case {
    const char *format;
    const char *zone;
    const char *text;
    int64_t ref_ns; /* read time */
    bool ok;
    int64_t ns;
} times[] = {
    { "rfc3339", "UTC", "2026-11-30T01:02:03.123456789Z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523123456789) },
    { "rfc3339", "UTC", "2026-11-30T01:02:03+01:00", INT64_C(1796126400000000000), true,
      INT64_C(1795996923000000000) },
    { "rfc3339", "UTC", "2026-11-30 01:02:03.5-05:30", INT64_C(1796126400000000000), true,
      INT64_C(1796020323500000000) },
    { "rfc3339", "UTC", "2026-11-30t01:02:03z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "rfc3339", "UTC", "2026-11-30T01:02:03.1234567891Z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523123456789) },
    { "rfc3339", "Europe/Berlin", "2026-11-30T01:02:03", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "2026-11-30T01:02:03+0100", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "2026-11-30T01:02Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "20261130T010203Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "2016-12-31T23:59:60Z", INT64_C(1796126400000000000), true,
      INT64_C(1483228800000000000) },
    { "rfc3339", "UTC", "2262-04-11T23:47:16.854775807Z", INT64_C(1796126400000000000), true,
      INT64_C(9223372036854775807) },
    { "rfc3339", "UTC", "2262-04-11T23:47:16.854775808Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "1677-09-21T00:12:43.145224192Z", INT64_C(1796126400000000000), true,
      INT64_MIN },
    { "rfc3339", "UTC", "1677-09-21T00:12:43.145224191Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "1676-12-31T23:59:59Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "2263-01-01T00:00:00Z", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "9999-12-31T23:59:59-23:59", INT64_C(1796126400000000000), false, 0 },
    { "rfc3339", "UTC", "1677-09-21T00:00:00-23:00", INT64_C(1796126400000000000), true,
      INT64_C(-9223290000000000000) },
    { "iso8601", "Europe/Berlin", "2026-11-30T01:02:03", INT64_C(1796126400000000000), true,
      INT64_C(1795996923000000000) },
    { "iso8601", "UTC", "2026-11-30T01:02:03,25Z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523250000000) },
    { "iso8601", "UTC", "20261130T010203Z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "iso8601", "UTC", "20261130T010203.5+0100", INT64_C(1796126400000000000), true,
      INT64_C(1795996923500000000) },
    { "iso8601", "Europe/Berlin", "2026-11-30", INT64_C(1796126400000000000), true,
      INT64_C(1795993200000000000) },
    { "iso8601", "UTC", "2026-11-30T01:02", INT64_C(1796126400000000000), true,
      INT64_C(1796000520000000000) },
    { "iso8601", "UTC", "2026-11-30T01:02:03+05", INT64_C(1796126400000000000), true,
      INT64_C(1795982523000000000) },
    { "iso8601", "UTC", "2026-11-30 01:02:03.000001-08:00", INT64_C(1796126400000000000), true,
      INT64_C(1796029323000001000) },
    { "iso8601", "UTC", "2026-11-30T", INT64_C(1796126400000000000), false, 0 },
    { "iso8601", "UTC", "2026-11-30T01:02:03+5", INT64_C(1796126400000000000), false, 0 },
    { "iso8601", "UTC", "2026-11-30T01:02:03.", INT64_C(1796126400000000000), false, 0 },
    { "rfc3164", "UTC", "Dec  1 00:08:01", INT64_C(1796126400000000000), true,
      INT64_C(1796083681000000000) },
    { "rfc3164", "UTC", "Dec 31 23:59:59", INT64_C(1798761610000000000), true,
      INT64_C(1798761599000000000) },
    { "rfc3164", "UTC", "Jan  1 00:00:05", INT64_C(1798761590000000000), true,
      INT64_C(1798761605000000000) },
    { "rfc3164", "UTC", "Dec  2 12:00:00", INT64_C(1796126400000000000), true,
      INT64_C(1796212800000000000) },
    { "rfc3164", "UTC", "Dec  2 12:00:01", INT64_C(1796126400000000000), true,
      INT64_C(1764676801000000000) },
    { "rfc3164", "UTC", "Feb 29 12:00:00", INT64_C(1772323200000000000), true,
      INT64_C(1709208000000000000) },
    { "rfc3164", "Europe/Berlin", "Jan  1 00:30:00", INT64_C(1798758000000000000), true,
      INT64_C(1798759800000000000) },
    { "rfc3164", "Europe/Berlin", "Dec 31 23:30:00", INT64_C(1798758000000000000), true,
      INT64_C(1798756200000000000) },
    { "rfc3164", "UTC", "Dec  1 0:08:01", INT64_C(1796126400000000000), true,
      INT64_C(1796083681000000000) },
    { "rfc3164", "UTC", "dec  1 00:08:01", INT64_C(1796126400000000000), true,
      INT64_C(1796083681000000000) },
    { "rfc3164", "UTC", "Dex  1 00:08:01", INT64_C(1796126400000000000), false, 0 },
    { "rfc3164", "UTC", "Dec 32 00:08:01", INT64_C(1796126400000000000), false, 0 },
    { "rfc3164", "UTC", "Dec  1 00:08", INT64_C(1796126400000000000), false, 0 },
    { "rfc3164", "UTC", "Dec  1 00:08:01 host", INT64_C(1796126400000000000), false, 0 },
    { "common_log", "UTC", "10/Oct/2000:13:55:36 -0700", INT64_C(1796126400000000000), true,
      INT64_C(971211336000000000) },
    { "common_log", "UTC", "01/Dec/2026:00:08:01 +0000", INT64_C(1796126400000000000), true,
      INT64_C(1796083681000000000) },
    { "common_log", "UTC", "10/Oct/2000:13:55:36", INT64_C(1796126400000000000), false, 0 },
    { "unix", "UTC", "1733011681", INT64_C(1796126400000000000), true,
      INT64_C(1733011681000000000) },
    { "unix", "UTC", "1733011681.123", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123000000) },
    { "unix", "UTC", "1733011681.1234567899", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123456789) },
    { "unix", "UTC", "-1.5", INT64_C(1796126400000000000), true, INT64_C(-1500000000) },
    { "unix", "UTC", "0", INT64_C(1796126400000000000), true, INT64_C(0) },
    { "unix", "UTC", "9223372036", INT64_C(1796126400000000000), true,
      INT64_C(9223372036000000000) },
    { "unix", "UTC", "9223372037", INT64_C(1796126400000000000), false, 0 },
    { "unix", "UTC", "1733011681.", INT64_C(1796126400000000000), false, 0 },
    { "unix", "UTC", "1.7e9", INT64_C(1796126400000000000), false, 0 },
    { "unix", "UTC", "", INT64_C(1796126400000000000), false, 0 },
    { "unix", "UTC", "-", INT64_C(1796126400000000000), false, 0 },
    { "unix_ms", "UTC", "1733011681123", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123000000) },
    { "unix_ms", "UTC", "1733011681123.456", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123456000) },
    { "unix_us", "UTC", "1733011681123456", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123456000) },
    { "unix_ns", "UTC", "1733011681123456789", INT64_C(1796126400000000000), true,
      INT64_C(1733011681123456789) },
    { "unix_ns", "UTC", "99999999999999999999", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "Europe/Berlin", "2026-11-30 12:00:01.123",
      INT64_C(1796126400000000000), true, INT64_C(1796036401123000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.1", INT64_C(1796126400000000000), true,
      INT64_C(1796040001100000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.123456789", INT64_C(1796126400000000000),
      true, INT64_C(1796040001123456789) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30  12:00:01.5", INT64_C(1796126400000000000), true,
      INT64_C(1796040001500000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30	12:00:01.5", INT64_C(1796126400000000000),
      true, INT64_C(1796040001500000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.123x", INT64_C(1796126400000000000),
      false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-3012:00:01.1", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-13-01 00:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-31 00:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 24:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:60:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:61.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-00-10 12:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-00 12:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2024-02-29 12:00:00.0", INT64_C(1796126400000000000), true,
      INT64_C(1709208000000000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2023-02-29 12:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2000-02-29 12:00:00.0", INT64_C(1796126400000000000), true,
      INT64_C(951825600000000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2100-02-29 12:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "1677-01-01 00:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "1678-01-01 00:00:00.0", INT64_C(1796126400000000000), true,
      INT64_C(-9214560000000000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2262-01-01 00:00:00.0", INT64_C(1796126400000000000), true,
      INT64_C(9214646400000000000) },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2262-12-31 00:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "9999-12-31 23:59:59.9", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "0000-01-01 00:00:00.0", INT64_C(1796126400000000000), false,
      0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.\xff", INT64_C(1796126400000000000),
      false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC",
      "\xef\xbc\x92"
      "026-11-30 12:00:01.1",
      INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S.%f", "UTC", "2026-11-30 12:00:01.1\xc3", INT64_C(1796126400000000000),
      false, 0 },
    { "%F %T", "UTC", "2026-11-30 01:02:03", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "%F %T", "UTC", "2026-1-5 1:2:3", INT64_C(1796126400000000000), true,
      INT64_C(1767574923000000000) },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 +01:00", INT64_C(1796126400000000000), true,
      INT64_C(1795996923000000000) },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 -0130", INT64_C(1796126400000000000), true,
      INT64_C(1796005923000000000) },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 +01", INT64_C(1796126400000000000), true,
      INT64_C(1795996923000000000) },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 Z", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 +2400", INT64_C(1796126400000000000), false,
      0 },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 +0160", INT64_C(1796126400000000000), false,
      0 },
    { "%d/%b/%Y:%T %z", "UTC", "30/Nov/2026:01:02:03 CET", INT64_C(1796126400000000000), false, 0 },
    { "%a %b %e %H:%M:%S %Y", "UTC", "Tue Dec  1 00:08:01 2026", INT64_C(1796126400000000000), true,
      INT64_C(1796083681000000000) },
    { "%a %b %e %H:%M:%S %Y", "UTC", "Tuesday December 1 00:08:01 2026",
      INT64_C(1796126400000000000), true, INT64_C(1796083681000000000) },
    { "%h %e %T %Y", "UTC", "Dec 11 00:08:01 2026", INT64_C(1796126400000000000), true,
      INT64_C(1796947681000000000) },
    { "%A, %d %B %Y %I:%M:%S %p %Z", "Europe/Berlin", "Tuesday, 01 December 2026 12:08:01 AM CET",
      INT64_C(1796126400000000000), true, INT64_C(1796080081000000000) },
    { "%A, %d %B %Y %I:%M:%S %p %Z", "Europe/Berlin", "Monday, 01 June 2026 12:08:01 PM CEST",
      INT64_C(1796126400000000000), true, INT64_C(1780308481000000000) },
    { "%A, %d %B %Y %I:%M:%S %p %Z", "Europe/Berlin", "Monday, 01 June 2026 01:08:01 pm UTC",
      INT64_C(1796126400000000000), true, INT64_C(1780319281000000000) },
    { "%A, %d %B %Y %I:%M:%S %p %Z", "Europe/Berlin", "Monday, 01 June 2026 01:08:01 PM EST",
      INT64_C(1796126400000000000), false, 0 },
    { "%A, %d %B %Y %I:%M:%S %p %Z", "Europe/Berlin", "Monday, 01 June 2026 13:08:01 PM CEST",
      INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d %H:%M:%S %Z", "America/New_York", "2026-01-15 10:00:00 EST",
      INT64_C(1796126400000000000), true, INT64_C(1768489200000000000) },
    { "%Y-%m-%d %H:%M:%S %Z", "America/New_York", "2026-07-15 10:00:00 EDT",
      INT64_C(1796126400000000000), true, INT64_C(1784124000000000000) },
    { "%Y-%m-%d %H:%M:%S %Z", "America/New_York", "2026-07-15 10:00:00 GMT",
      INT64_C(1796126400000000000), true, INT64_C(1784109600000000000) },
    { "%Y-%m-%d %H:%M:%S %Z", "America/New_York", "2026-07-15 10:00:00 Z",
      INT64_C(1796126400000000000), true, INT64_C(1784109600000000000) },
    { "%Y-%m-%d %H:%M:%S %Z", "America/New_York", "2026-07-15 10:00:00 CEST",
      INT64_C(1796126400000000000), false, 0 },
    { "%Y-%j %T", "UTC", "2024-060 00:00:00", INT64_C(1796126400000000000), true,
      INT64_C(1709164800000000000) },
    { "%Y-%j %T", "UTC", "2024-366 00:00:00", INT64_C(1796126400000000000), true,
      INT64_C(1735603200000000000) },
    { "%Y-%j %T", "UTC", "2023-366 00:00:00", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%j %T", "UTC", "2023-000 00:00:00", INT64_C(1796126400000000000), false, 0 },
    { "%y%m%d %H%M%S", "UTC", "261130 010203", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "%y%m%d %H%M%S", "UTC", "691130 010203", INT64_C(1796126400000000000), true,
      INT64_C(-2761077000000000) },
    { "%Y%m%d%H%M%S", "UTC", "20261130010203", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "%H:%M:%S %d.%m.%Y", "UTC", "01:02:03 30.11.2026", INT64_C(1796126400000000000), true,
      INT64_C(1796000523000000000) },
    { "100%% %Y-%m-%d", "UTC", "100% 2026-11-30", INT64_C(1796126400000000000), true,
      INT64_C(1795996800000000000) },
    { "100%% %Y-%m-%d", "UTC", "100 2026-11-30", INT64_C(1796126400000000000), false, 0 },
    { "%Y-%m-%d%t%H:%M", "UTC", "2026-11-30 	 01:02", INT64_C(1796126400000000000), true,
      INT64_C(1796000520000000000) },
    { "%d %b %H:%M", "UTC", "02 Dec 12:00", INT64_C(1796126400000000000), true,
      INT64_C(1796212800000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-03-29 01:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1774745999000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-03-29 02:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1774746000000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-03-29 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1774747800000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-03-29 02:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1774749599000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-03-29 03:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1774746000000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-10-25 01:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1792886399000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-10-25 02:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1792886400000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-10-25 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1792888200000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-10-25 02:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1792889999000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2026-10-25 03:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1792893600000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "1975-07-01 12:00:00", INT64_C(1796126400000000000),
      true, INT64_C(173444400000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "1945-07-01 12:00:00", INT64_C(1796126400000000000),
      true, INT64_C(-773247600000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2100-07-01 12:00:00", INT64_C(1796126400000000000),
      true, INT64_C(4118119200000000000) },
    { "%Y-%m-%d %H:%M:%S", "Europe/Berlin", "2250-10-27 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(8861790600000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-03-08 01:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1772953199000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-03-08 02:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1772953200000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-03-08 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1772955000000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-03-08 03:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1772953200000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-11-01 00:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1793509199000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-11-01 01:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1793509200000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-11-01 01:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1793511000000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-11-01 01:59:59", INT64_C(1796126400000000000),
      true, INT64_C(1793512799000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2026-11-01 02:00:00", INT64_C(1796126400000000000),
      true, INT64_C(1793516400000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2006-04-02 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1143963000000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2006-10-29 01:30:00", INT64_C(1796126400000000000),
      true, INT64_C(1162099800000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2100-03-14 02:30:00", INT64_C(1796126400000000000),
      true, INT64_C(4108692600000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "2100-11-07 01:30:00", INT64_C(1796126400000000000),
      true, INT64_C(4129248600000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "1883-11-18 12:00:00", INT64_C(1796126400000000000),
      true, INT64_C(-2717651038000000000) },
    { "%Y-%m-%d %H:%M:%S", "America/New_York", "1700-01-01 00:00:00", INT64_C(1796126400000000000),
      true, INT64_C(-8520318238000000000) },
};

START_TEST(each_value_reads_as_its_instant_or_not_at_all)
{
    const struct time_case *tc = &times[_i];
    struct lf_tz *tz = NULL;
    struct lf_timefmt *f = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_tz_load(tc->zone, &tz, &eb) == LF_OK, "%s: %s", tc->zone, eb.msg);
    ck_assert_msg(lf_timefmt_new(tc->format, tz, &f, &eb) == LF_OK, "%s", eb.msg);
    int64_t ns = 0;
    bool ok = lf_timefmt_parse(f, tc->text, strlen(tc->text), tc->ref_ns, &ns);
    ck_assert_msg(ok == tc->ok, "case %d: %s %s \"%s\": parsed %d, expected %d", _i, tc->format,
                  tc->zone, tc->text, ok, tc->ok);
    if (tc->ok)
        ck_assert_msg(ns == tc->ns, "case %d: \"%s\": %lld, expected %lld", _i, tc->text,
                      (long long)ns, (long long)tc->ns);
    lf_timefmt_free(f);
    lf_tz_free(tz);
}
END_TEST

START_TEST(a_nul_byte_inside_a_value_does_not_parse)
{
    struct lf_tz *tz = NULL;
    struct lf_timefmt *f = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_tz_load("UTC", &tz, &eb), LF_OK);
    ck_assert_int_eq(lf_timefmt_new("rfc3339", tz, &f, &eb), LF_OK);
    int64_t ns = 0;
    ck_assert(!lf_timefmt_parse(f, "2026-11-30T01:02:03\0Z", 21, 0, &ns));
    ck_assert(lf_timefmt_parse(f, "2026-11-30T01:02:03Z\0", 20, 0, &ns));
    ck_assert_int_eq(ns, INT64_C(1796000523000000000));
    lf_timefmt_free(f);
    lf_tz_free(tz);
}
END_TEST

static const struct bad_format {
    const char *format;
    const char *why;
} bad_formats[] = {
    { "rfc3338", "expected rfc3339, iso8601, rfc3164, common_log, unix, unix_ms, unix_us, "
                 "unix_ns or a layout with % directives such as %Y-%m-%d %H:%M:%S" },
    { "%Y-%m-%d %Q", "unknown directive; known: %Y %y %m %b %h %B %d %e %j %H %I %p %M %S %f %a "
                     "%A %z %Z %T %F %n %t %%" },
    { "%Y-%m-%d %", "the layout ends in a lone %" },
    { "%H:%M:%S", "a layout needs a day and a month (%d or %e, and %m or %b), or %j" },
    { "%Y-%m %H", "a layout needs a day and a month (%d or %e, and %m or %b), or %j" },
    { "%j %T", "%j needs a year (%Y or %y)" },
    { "%F %I:%M", "%I and %p go together" },
};

START_TEST(a_bad_format_says_why)
{
    ck_assert_str_eq(lf_timefmt_check(bad_formats[_i].format), bad_formats[_i].why);
}
END_TEST

START_TEST(zones_load_by_name_and_unknown_ones_are_refused)
{
    struct lf_tz *tz = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_ptr_null(lf_tz_check("Europe/Berlin"));
    ck_assert_ptr_null(lf_tz_check("UTC"));
    ck_assert_ptr_null(lf_tz_check("Local"));
    ck_assert_ptr_null(lf_tz_check("+05:30"));
    ck_assert_ptr_nonnull(lf_tz_check("Europe/Berlim"));
    ck_assert_ptr_nonnull(lf_tz_check("../../etc/passwd"));
    ck_assert_ptr_nonnull(lf_tz_check("/etc/passwd"));
    ck_assert_ptr_nonnull(lf_tz_check("+25:00"));
    ck_assert_int_eq(lf_tz_load("Europe/Berlim", &tz, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "/usr/share/zoneinfo/Europe/Berlim: No such file or directory");
    ck_assert_int_eq(lf_tz_load("zone.tab", &tz, &eb), LF_ECONFIG); /* a file, not TZif */
    ck_assert_str_eq(eb.msg, "/usr/share/zoneinfo/zone.tab: not a TZif file");
    ck_assert_int_eq(lf_tz_load("+05:30", &tz, &eb), LF_OK);
    ck_assert_int_eq(lf_tz_offset_at(tz, 0), 19800);
    ck_assert_int_eq(lf_tz_local_to_utc(tz, 19800), 0);
    lf_tz_free(tz);
}
END_TEST

/* Writes n bytes to dir/name. */
static void write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(a_version_1_file_loads_and_broken_ones_are_refused)
{
    /* TZif v1: one transition at 1000000000 from AAA (+0) to BBB (+1 h), no footer */
    static const unsigned char v1[] = {
        'T',  'Z',  'i',  'f',  0,   0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* header */
        0,    0,    0,    0,    0,   0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
        0,    0,    0,    8,            /* counts */
        0x3b, 0x9a, 0xca, 0x00,         /* 1000000000 */
        1,                              /* its type */
        0,    0,    0,    0,    0,   0, /* AAA +0 */
        0,    0,    0x0e, 0x10, 0,   4, /* BBB +3600 */
        'A',  'A',  'A',  0,    'B', 'B', 'B', 0,
    };
    char dir[] = "/tmp/lf-tz-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    write_file(dir, "V1", v1, sizeof(v1));
    write_file(dir, "Short", v1, sizeof(v1) - 9);
    write_file(dir, "Text", "TZ=UTC\n", 7);
    ck_assert_int_eq(setenv("TZDIR", dir, 1), 0);
    struct lf_tz *tz = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_tz_load("V1", &tz, &eb), LF_OK);
    ck_assert_int_eq(lf_tz_offset_at(tz, 999999999), 0);
    ck_assert_int_eq(lf_tz_offset_at(tz, 1000000000), 3600);
    /* local 1000001800 lies in the gap [1000000000, 1000003600): shifted forward */
    ck_assert_int_eq(lf_tz_local_to_utc(tz, 1000001800), 1000001800);
    ck_assert_int_eq(lf_tz_local_to_utc(tz, 1000003600), 1000000000);
    int32_t off = 0;
    ck_assert(lf_tz_abbrev(tz, "BBB", 3, &off));
    ck_assert_int_eq(off, 3600);
    lf_tz_free(tz);
    tz = NULL;
    ck_assert_int_eq(lf_tz_load("Short", &tz, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg + strlen(dir), "/Short: a truncated TZif file");
    ck_assert_int_eq(lf_tz_load("Text", &tz, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg + strlen(dir), "/Text: not a TZif file");
    ck_assert_int_eq(unsetenv("TZDIR"), 0);
    ck_assert_int_eq(lf_tz_load("right/Europe/Berlin", &tz, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "/usr/share/zoneinfo/right/Europe/Berlin: leap-second (\"right/\") "
                             "zones are not supported");
    char path[512];
    const char *names[] = { "V1", "Short", "Text" };
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        ck_assert_int_eq(unlink(path), 0);
    }
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(offsets_follow_the_table_and_the_footer_rule)
{
    struct lf_tz *tz = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_tz_load("America/New_York", &tz, &eb), LF_OK);
    /* 2026-03-08T06:59:59Z is 01:59:59 EST; a second later 03:00:00 EDT */
    ck_assert_int_eq(lf_tz_offset_at(tz, INT64_C(1772953199)), -18000);
    ck_assert_int_eq(lf_tz_offset_at(tz, INT64_C(1772953200)), -14400);
    /* 2200-11-02T05:59:59Z, 06:00:00Z: the last Sunday rule carried past the table */
    ck_assert_int_eq(lf_tz_offset_at(tz, INT64_C(7284491999)), -14400);
    ck_assert_int_eq(lf_tz_offset_at(tz, INT64_C(7284492000)), -18000);
    int32_t off = 0;
    ck_assert(lf_tz_abbrev(tz, "EDT", 3, &off));
    ck_assert_int_eq(off, -14400);
    ck_assert(!lf_tz_abbrev(tz, "LMT", 3, &off));
    lf_tz_free(tz);
}
END_TEST

/* ---- the stage ---- */

static bool ignore_missing; /* for the next start() only */

static enum lf_err start(const char *field,
                         const char *f1,
                         const char *f2,
                         const char *zone,
                         bool remove,
                         struct lf_errbuf *eb)
{
    static char *formats[2];
    struct lf_parser_conf pc = { .kind = LF_PARSER_TIMESTAMP };
    formats[0] = (char *)f1;
    formats[1] = (char *)f2;
    pc.u.timestamp.field = (char *)field;
    pc.u.timestamp.formats = formats;
    pc.u.timestamp.n_formats = f1 == NULL ? 0 : f2 == NULL ? 1 : 2;
    pc.u.timestamp.timezone = (char *)zone;
    pc.u.timestamp.remove_field = remove;
    pc.u.timestamp.ignore_missing = ignore_missing;
    ignore_missing = false;
    return fx_start(&lf_stage_timestamp, &pc, eb);
}

static int64_t last_ns;

static enum lf_err keep_time(void *arg, const struct lf_event *ev)
{
    last_ns = ev->timestamp_ns;
    return collect(arg, ev);
}

static void run(const char *prior)
{
    struct lf_event ev = {
        LF_STR_LIT("line"), 42, 0, 5, 0, NULL, lf_str_make(prior, strlen(prior)), 0
    };
    struct lf_stage_out out = { keep_time, NULL };
    size_t before = fx.n;
    last_ns = 0;
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_uint_eq(fx.n, before + 1);
}

#define T1      "\"2026-11-30T01:02:03.5Z\""
#define T1NS    INT64_C(1796000523500000000)
#define NOMATCH "\"error\":{\"message\":\"timestamp: ts matches none of the formats\"}"

static const struct stage_case {
    const char *field;
    bool remove;
    const char *prior;
    int64_t ns;        /* 42: the read time kept */
    const char *extra; /* after the stage */
} stage_cases[] = {
    /* 0-3: removal of the first, a middle, the last and the only member */
    { "ts", true, "\"ts\":" T1 ",\"level\":\"warn\"", T1NS, "\"level\":\"warn\"" },
    { "ts", true, "\"a\":1,\"ts\":" T1 ",\"b\":2", T1NS, "\"a\":1,\"b\":2" },
    { "ts", true, "\"a\":1,\"ts\":" T1, T1NS, "\"a\":1" },
    { "ts", true, "\"ts\":" T1, T1NS, "" },
    /* 3a-3c: blanks around the member removed (the first or last left as a slice) */
    { "ts", true, "\"ts\":" T1 " , \"b\":2", T1NS, " \"b\":2" },
    { "ts", true, "\"a\":1 ,\"ts\":" T1, T1NS, "\"a\":1 " },
    { "ts", true, " \"ts\":" T1 ",\"b\":2", T1NS, " \"b\":2" },
    /* 4: without remove_field the members stay as they were */
    { "ts", false, "\"ts\":" T1 ",\"level\":\"warn\"", T1NS, "\"ts\":" T1 ",\"level\":\"warn\"" },
    /* 5-6: a dotted path into an object (dissect/kv/ndjson target), removed from it */
    { "app.ts", true, "\"stream\":\"stdout\",\"app\":{\"level\":\"info\",\"ts\":" T1 "}", T1NS,
      "\"stream\":\"stdout\",\"app\":{\"level\":\"info\"}" },
    { "app.ts", false, "\"app\":{\"ts\":\"x\"},\"app.ts\":" T1, T1NS,
      "\"app\":{\"ts\":\"x\"},\"app.ts\":" T1 },
    /* 7: escapes a JSON encoder may write (\u002B is '+', \/ is '/') */
    { "ts", false, "\"ts\":\"2026-11-30T02:02:03.5\\u002B01:00\"", T1NS,
      "\"ts\":\"2026-11-30T02:02:03.5\\u002B01:00\"" },
    /* 8: a JSON number (ndjson keeps numbers as written) read by unix_ms */
    { "ts", true, "\"ts\":1796000523500,\"x\":true", T1NS, "\"x\":true" },
    /* 9-12: no time: the read time stays, error.message says why, members stay */
    { "ts", true, "\"level\":\"warn\"", 42,
      "\"level\":\"warn\",\"error\":{\"message\":\"timestamp: ts is missing\"}" },
    { "ts", true, "\"ts\":\"yesterday\"", 42, "\"ts\":\"yesterday\"," NOMATCH },
    { "ts", true, "\"ts\":{\"s\":1}", 42, "\"ts\":{\"s\":1}," NOMATCH },
    { "ts", true, "\"ts\":\"2026-11-30\\n01:02:03Z\"", 42,
      "\"ts\":\"2026-11-30\\n01:02:03Z\"," NOMATCH },
    /* 13: an error from an earlier stage is kept, not doubled */
    { "ts", true, "\"ts\":\"x\",\"error\":{\"message\":\"kv: no key=value pair in the line\"}", 42,
      "\"ts\":\"x\",\"error\":{\"message\":\"kv: no key=value pair in the line\"}" },
    /* 14: an event without members */
    { "ts", true, "", 42, "\"error\":{\"message\":\"timestamp: ts is missing\"}" },
};

START_TEST(each_event_gets_its_time_and_members)
{
    const struct stage_case *sc = &stage_cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(sc->field, "rfc3339", "unix_ms", NULL, sc->remove, &eb), LF_OK);
    run(sc->prior);
    ck_assert_int_eq(last_ns, sc->ns);
    ck_assert_str_eq(fx.extra, sc->extra);
    ck_assert_str_eq(fx.msg, "line");
}
END_TEST

START_TEST(the_first_format_that_reads_the_value_wins)
{
    struct lf_errbuf eb = { "" };
    /* "2026-11-30 01:02:03" reads as the layout in Berlin before iso8601 in UTC could */
    ck_assert_int_eq(start("ts", "%Y-%m-%d %H:%M:%S", "iso8601", "Europe/Berlin", false, &eb),
                     LF_OK);
    run("\"ts\":\"2026-11-30 01:02:03\"");
    ck_assert_int_eq(last_ns, INT64_C(1795996923000000000));
    run("\"ts\":\"2026-11-30T01:02:03Z\""); /* the layout fails; iso8601 reads it */
    ck_assert_int_eq(last_ns, INT64_C(1796000523000000000));
}
END_TEST

START_TEST(the_defaults_read_what_the_syslog_stage_leaves)
{
    struct lf_errbuf eb = { "" };
    /* field timestamp, formats rfc3339 and rfc3164, timezone UTC */
    ck_assert_int_eq(start(NULL, NULL, NULL, NULL, false, &eb), LF_OK);
    struct lf_event ev = { LF_STR_LIT("m"),
                           INT64_C(1796126400000000000) /* 2026-12-01 12:00Z */,
                           0,
                           2,
                           0,
                           NULL,
                           LF_STR_LIT("\"timestamp\":\"Dec  1 00:08:01\""),
                           0 };
    struct lf_stage_out out = { keep_time, NULL };
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_int_eq(last_ns, INT64_C(1796083681000000000)); /* 2026-12-01T00:08:01Z */
    ev.extra = LF_STR_LIT("\"timestamp\":\"2026-12-01T00:08:01.25+01:00\"");
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_int_eq(last_ns, INT64_C(1796080081250000000));
}
END_TEST

START_TEST(ignore_missing_lets_an_event_without_the_member_pass)
{
    struct lf_errbuf eb = { "" };
    ignore_missing = true;
    ck_assert_int_eq(start("ts", "rfc3339", NULL, NULL, true, &eb), LF_OK);
    run("\"level\":\"warn\"");
    ck_assert_int_eq(last_ns, 42);
    ck_assert_str_eq(fx.extra, "\"level\":\"warn\"");
    run("");
    ck_assert_str_eq(fx.extra, "");
    /* a member that is there but does not parse is still an error */
    run("\"ts\":\"yesterday\"");
    ck_assert_int_eq(last_ns, 42);
    ck_assert_str_eq(fx.extra, "\"ts\":\"yesterday\"," NOMATCH);
    /* and one that parses is read and removed as always */
    run("\"ts\":" T1);
    ck_assert_int_eq(last_ns, T1NS);
    ck_assert_str_eq(fx.extra, "");
}
END_TEST

START_TEST(field_message_reads_the_message_itself)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("message", "unix", NULL, NULL, false, &eb), LF_OK);
    struct lf_event ev = { LF_STR_LIT("1733011681.25"), 42, 0, 14, 0, NULL, { NULL, 0 }, 0 };
    struct lf_stage_out out = { keep_time, NULL };
    ck_assert_int_eq(fx.ops->process(fx.spec, fx.state, &ev, 0, &out), LF_OK);
    ck_assert_int_eq(last_ns, INT64_C(1733011681250000000));
    ck_assert_str_eq(fx.extra, "");
}
END_TEST

START_TEST(the_encoded_event_carries_the_line_time)
{
    struct lf_errbuf eb = { "" };
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/app.log", "app", "node-1", NULL, false, &src), LF_OK);
    ck_assert_int_eq(start("ts", "%Y-%m-%d %H:%M:%S.%f", NULL, "Europe/Berlin", true, &eb), LF_OK);
    const char *prior = "\"ts\":\"2026-03-29 03:00:00.123\",\"level\":\"warn\"";
    feed("m", 1, prior, src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(
        fx.json.ptr,
        "{\"@timestamp\":\"2026-03-29T01:00:00.123Z\",\"message\":\"m\","
        "\"log\":{\"file\":{\"path\":\"/var/log/app.log\"},\"offset\":0},"
        "\"level\":\"warn\",\"input\":{\"id\":\"app\"},\"host\":{\"name\":\"node-1\"}}\n");
    lf_source_free(src);
}
END_TEST

START_TEST(bad_settings_are_config_errors_that_say_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("ts", "rfc3339", NULL, "Mars/Olympus", false, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "timestamp: timezone Mars/Olympus: "
                             "/usr/share/zoneinfo/Mars/Olympus: No such file or directory");
    ck_assert_ptr_null(fx.spec);
    ck_assert_int_eq(start("ts", "rfc3339", "%Y %Q", NULL, false, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "timestamp: format \"%Y %Q\": unknown directive; known: %Y %y %m %b "
                             "%h %B %d %e %j %H %I %p %M %S %f %a %A %z %Z %T %F %n %t %%");
    ck_assert_int_eq(start("message", "unix", NULL, NULL, true, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "timestamp: remove_field cannot remove the message");
}
END_TEST

/* Run alone by check_timestamp_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start("ts", "%Y-%m-%d %H:%M:%S.%f", "rfc3164", "Europe/Berlin", true, &eb),
                     LF_OK);
    const char *priors[] = { "\"ts\":\"2026-11-30 12:00:01.123\",\"level\":\"warn\"",
                             "\"level\":\"warn\",\"ts\":\"Dec  1 00:08:01\"",
                             "\"ts\":\"2026-10-25 02:30:00.5\"", "\"ts\":\"garbage\"",
                             "\"level\":\"warn\"" };
    struct lf_event evs[5];
    for (size_t i = 0; i < 5; i++) {
        struct lf_event ev = { LF_STR_LIT("m"),
                               INT64_C(1796126400000000000),
                               0,
                               2,
                               0,
                               NULL,
                               lf_str_make(priors[i], strlen(priors[i])),
                               0 };
        evs[i] = ev;
    }
    enum lf_err err = LF_OK;
    uint64_t allocs = fx_steady_allocs(evs, 5, 200, &err);
    ck_assert_int_eq(err, LF_OK);
    ck_assert_uint_eq(allocs, 0);
}
END_TEST

static Suite *timestamp_suite(void)
{
    Suite *s = suite_create("timestamp");
    TCase *tc = tcase_create("formats");
    tcase_add_loop_test(tc, each_value_reads_as_its_instant_or_not_at_all, 0,
                        (int)(sizeof(times) / sizeof(times[0])));
    tcase_add_test(tc, a_nul_byte_inside_a_value_does_not_parse);
    tcase_add_loop_test(tc, a_bad_format_says_why, 0,
                        (int)(sizeof(bad_formats) / sizeof(bad_formats[0])));
    suite_add_tcase(s, tc);
    TCase *zones = tcase_create("zones");
    tcase_add_test(zones, zones_load_by_name_and_unknown_ones_are_refused);
    tcase_add_test(zones, offsets_follow_the_table_and_the_footer_rule);
    tcase_add_test(zones, a_version_1_file_loads_and_broken_ones_are_refused);
    suite_add_tcase(s, zones);
    TCase *stage = tcase_create("stage");
    tcase_add_checked_fixture(stage, NULL, teardown);
    tcase_add_loop_test(stage, each_event_gets_its_time_and_members, 0,
                        (int)(sizeof(stage_cases) / sizeof(stage_cases[0])));
    tcase_add_test(stage, the_first_format_that_reads_the_value_wins);
    tcase_add_test(stage, the_defaults_read_what_the_syslog_stage_leaves);
    tcase_add_test(stage, field_message_reads_the_message_itself);
    tcase_add_test(stage, ignore_missing_lets_an_event_without_the_member_pass);
    tcase_add_test(stage, the_encoded_event_carries_the_line_time);
    tcase_add_test(stage, bad_settings_are_config_errors_that_say_why);
    suite_add_tcase(s, stage);
    TCase *alloc = tcase_create("alloc");
    tcase_set_tags(alloc, "alloc");
    tcase_add_checked_fixture(alloc, NULL, teardown);
    tcase_add_test(alloc, steady_state_allocates_nothing_per_event);
    suite_add_tcase(s, alloc);
    return s;
}

int main(void)
{
    return stage_fixture_main(timestamp_suite());
}
