/*
 * demo.h - config/demo.conf, embedded at build time (see meson.build), and
 * where the files it serves are: its relative paths resolve against
 * demo_dir().
 */
#ifndef WEIR_DAEMON_DEMO_H
#define WEIR_DAEMON_DEMO_H

extern const char weir_demo_conf[];

/* The demo's name in messages. */
#define WEIR_DEMO_NAME "embedded demo.conf"

/*
 * $WEIR_DEMO_DIR when set; else DATADIR/weir when this is the installed
 * binary (PREFIX/BINDIR/weir), which holds what `meson install` put there;
 * else the source tree, for a binary run from the build tree.
 */
const char *demo_dir(void);

#endif
