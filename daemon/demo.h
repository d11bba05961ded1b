/*
 * demo.h - config/demo.conf, embedded at build time (see meson.build).
 * Its relative paths resolve against the source tree's config/ directory,
 * WEIR_DEMO_DIR, wherever weir is started from.
 */
#ifndef WEIR_DAEMON_DEMO_H
#define WEIR_DAEMON_DEMO_H

extern const char weir_demo_conf[];

#define WEIR_DEMO_NAME WEIR_DEMO_DIR "/demo.conf"

#endif
