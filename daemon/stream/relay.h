/*
 * relay.h - a proxy's reverse direction (relay.c); relay_cut and
 * relay_teardown are in worker.h.
 */
#ifndef WEIR_DAEMON_RELAY_H
#define WEIR_DAEMON_RELAY_H

struct stream;

int relay_open(struct stream *s);     /* main thread */
void relay_free(struct stream *s);    /* main thread */
void relay_prepare(struct stream *s); /* before the client's fd is consumed */
void relay_start(struct stream *s);   /* after the forward sink is built */

#endif
