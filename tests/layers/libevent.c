/* Includes libevent: compiles only in egress-proxy/. */
#include <event2/event.h>

typedef int	layer_probe;
