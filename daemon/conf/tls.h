/*
 * tls.h - the TLS contexts of tls: and tls-listen: addresses, and what an
 * operator reads when a handshake fails.
 */
#ifndef WEIR_DAEMON_CONF_TLS_H
#define WEIR_DAEMON_CONF_TLS_H

#include "conf/config.h"

/* Makes a->tls_ctx from the address's options (files loaded, the key
 * checked against the certificate); a problem is a config error at the
 * address. A non-TLS address is left alone. */
void conf_tls_check(struct weir_address *a, struct conf_diag *diag);

/* A reload keeps pipelines whose addresses are the same: their contexts
 * read their files again, so new handshakes take a renewed certificate.
 * A file that no longer loads is logged and the old one stays. */
void conf_tls_reload(const struct weir_pipeline *p);

/* Says, for each address and reason, how many failed handshakes the
 * once-a-minute limit held back since its last line (at exit). */
void conf_tls_flush_suppressed(void);
/* One debug line, once per process: kernel TLS or user space. */
void conf_tls_note_kernel(void);

#endif
