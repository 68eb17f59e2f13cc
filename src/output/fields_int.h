/* fields_int.h - the outputs' name for the fields module, whose API is public since the
 * stages use it too: see include/logferry/fields.h. */
#ifndef LF_FIELDS_INT_H
#define LF_FIELDS_INT_H

#include "logferry/fields.h"

#endif
