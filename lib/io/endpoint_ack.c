/*
 * endpoint_ack.c - what a sink's far side has of its stream
 * (weir_endpoint_acked), for checkpoints.
 *
 * A TCP socket's send queue (SIOCOUTQ) holds what was handed to the
 * kernel and not yet acknowledged by the peer, so the bytes handed over
 * minus it are what the peer's TCP has. Reading it is one ioctl, cheap
 * enough for a watch every few hundred ms. After a shutdown the queue
 * also counts the FIN's sequence number until the FIN is acknowledged:
 * the states that have sent a FIN not acknowledged yet say when.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "endpoint_impl.h"

/* Of `sent` bytes handed to fd's kernel, those its peer acknowledged. */
static uint64_t sock_acked(int fd, uint64_t sent)
{
    int outq = 0;

    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    if (ioctl(fd, SIOCOUTQ, &outq) != 0 || outq < 0)
        return 0; /* cannot tell: none */
    if (outq > 0 && getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
        (ti.tcpi_state == TCP_FIN_WAIT1 || ti.tcpi_state == TCP_CLOSING ||
         ti.tcpi_state == TCP_LAST_ACK))
        outq--; /* the FIN */
    return (uint64_t)outq < sent ? sent - (uint64_t)outq : 0;
}

int weir_endpoint_acked(const struct weir_endpoint *ep, uint64_t *acked)
{
    switch (ep->kind) {
    case EP_SOCKET_SINK:
        if (ep->fd < 0 || (ep->conn != CONN_UP && ep->conn != CONN_REPLAY)) {
            /* Down: what the lost connection's peer had acknowledged. */
            *acked = ep->replay_off < ep->stream_sent ? ep->replay_off
                                                      : ep->stream_sent;
            return 0;
        }
        *acked = ep->conn_base + sock_acked(ep->fd, ep->conn_sent);
        return 0;
    case EP_FD_SINK:
        *acked = ep->is_socket && ep->fd >= 0 ? sock_acked(ep->fd, ep->bytes)
                                              : ep->bytes;
        return 0;
    case EP_NULL_SINK:
        *acked = ep->bytes;
        return 0;
    default:
        return -EINVAL;
    }
}
