/*
 * endpoint_ack.c - what a sink's far side has of its stream: for
 * checkpoints (weir_endpoint_acked), and for a reconnecting sink's copy
 * and its resume point (endpoint_socket.c, endpoint_resume.c).
 *
 * Two readings, for two kinds of socket:
 *  - a connection the sink made itself: TCP_INFO's tcpi_bytes_acked,
 *    which counts every byte the peer acknowledged since the SYN (itself
 *    one). It stays right after the connection failed, when the send
 *    queue has been purged, which is when a resume needs it most;
 *  - a socket handed in (an fd sink), or a unix socket: the send queue
 *    (SIOCOUTQ) holds what was handed to the kernel and not yet
 *    acknowledged, so the bytes handed over minus it are what the peer
 *    has. It is relative to what this sink sent, whatever the socket
 *    carried before it came. After a shutdown the queue also counts the
 *    FIN's sequence number until the FIN is acknowledged: the states that
 *    have sent a FIN not acknowledged yet say when. A unix socket reports
 *    its queue as the memory its unread buffers are charged, more than
 *    their bytes, so the figure errs low (a resume sends some bytes
 *    again) until the peer has read everything, and is exact then.
 * Both are one system call, cheap enough for a watch every few hundred ms.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "endpoint_base.h"

/* Three of the kernel's TCP states (its net/tcp_states.h: a stable ABI,
 * what tcpi_state reports). linux/tcp.h has tcpi_bytes_acked but not
 * these, and netinet/tcp.h has these but a struct tcp_info without it,
 * and the two headers cannot be included together. */
enum { ST_FIN_WAIT1 = 4, ST_LAST_ACK = 9, ST_CLOSING = 11 };

/* Of `sent` bytes handed to fd's kernel, those that left its send queue. */
uint64_t weir__ep_queue_acked(int fd, uint64_t sent)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    int outq = 0;

    if (ioctl(fd, SIOCOUTQ, &outq) != 0 || outq < 0)
        return 0; /* cannot tell: none */
    if (outq > 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
        (ti.tcpi_state == ST_FIN_WAIT1 || ti.tcpi_state == ST_CLOSING ||
         ti.tcpi_state == ST_LAST_ACK))
        outq--; /* the FIN */
    return (uint64_t)outq < sent ? sent - (uint64_t)outq : 0;
}

uint64_t weir__ep_conn_acked(int fd, int family, uint64_t sent)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (fd < 0)
        return 0;
    if (family == AF_UNIX)
        return weir__ep_queue_acked(fd, sent);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) +
                  sizeof(ti.tcpi_bytes_acked) ||
        ti.tcpi_bytes_acked == 0)
        return 0; /* cannot tell, or not even the SYN: none */
    /* Never past what was sent: the FIN's acknowledgement counts too. */
    return ti.tcpi_bytes_acked - 1 < sent ? ti.tcpi_bytes_acked - 1 : sent;
}
