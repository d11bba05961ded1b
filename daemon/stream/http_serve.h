/*
 * http_serve.h - a client of an http-listen sink: its stream is one HTTP
 * connection (httpd/http_conn.h) on the stream's worker, answered from
 * the pipeline's file or directory source.
 */
#ifndef WEIR_DAEMON_HTTP_SERVE_H
#define WEIR_DAEMON_HTTP_SERVE_H

struct stream;

/* On the stream's worker, from its start task: takes a hold on the
 * stream that the connection's end releases. A connection that cannot
 * be made ends the stream with the error. */
void http_serve_start(struct stream *s);

#endif
