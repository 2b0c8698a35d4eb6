#ifndef EXOSPHERE_CLIBPQ_SHIM_H
#define EXOSPHERE_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
