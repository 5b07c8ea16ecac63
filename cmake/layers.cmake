# layers.cmake: the build's half of the layer rule (docs/architecture.md,
# "Layers"). Only egress-proxy/ runs an event loop: egress-proxy/core/ and
# controller/ must not use libevent or c-ares. Their headers sit in
# /usr/include, which every compile searches, so leaving them off an include
# path does not hide them. sg_layer_guard(TARGET) puts a folder of headers
# of the same names, each one an #error, first on TARGET's include path.
find_path(SG_EVENT2_DIR event2/event.h HINTS ${LIBEVENT_INCLUDE_DIRS} REQUIRED)
find_path(SG_ARES_DIR ares.h HINTS ${CARES_INCLUDE_DIRS} REQUIRED)
set(SG_LAYER_GUARD_DIR ${CMAKE_BINARY_DIR}/layer-guard)
file(GLOB SG_GUARDED_EVENT RELATIVE ${SG_EVENT2_DIR}
	${SG_EVENT2_DIR}/event2/*.h ${SG_EVENT2_DIR}/ev*.h)
file(GLOB SG_GUARDED_ARES RELATIVE ${SG_ARES_DIR} ${SG_ARES_DIR}/ares*.h)
foreach(h ${SG_GUARDED_EVENT} ${SG_GUARDED_ARES})
	# CONFIGURE rewrites a file only when its text changes: no rebuilds.
	file(CONFIGURE OUTPUT ${SG_LAYER_GUARD_DIR}/${h} CONTENT "#error \"<${h}>: \
libevent and c-ares belong to egress-proxy/ alone, not to egress-proxy/core/ \
or controller/ (docs/architecture.md, Layers)\"\n")
endforeach()

function(sg_layer_guard target)
	target_include_directories(${target} BEFORE PRIVATE ${SG_LAYER_GUARD_DIR})
endfunction()
