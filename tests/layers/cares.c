/* Includes c-ares: compiles only in egress-proxy/. */
#include <ares.h>

typedef int	layer_probe;
