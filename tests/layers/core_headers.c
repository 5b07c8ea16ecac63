/* Includes core headers: compiles in every layer. */
#include "checkpoint.h"
#include "eventlog.h"
#include "log.h"
#include "policy.h"
#include "util.h"

typedef int	layer_probe;
