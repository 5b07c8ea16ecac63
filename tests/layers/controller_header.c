/* Includes a controller header: compiles only in controller/. */
#include "docker.h"

typedef int	layer_probe;
