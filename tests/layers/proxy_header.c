/* Includes a proxy header: compiles only in egress-proxy/. */
#include "conn.h"

typedef int	layer_probe;
