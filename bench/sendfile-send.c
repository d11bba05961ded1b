/*
 * sendfile-send - the minimal sendfile(2) sender of the `e2e` suite:
 *
 *   sendfile-send FILE PORT
 *
 * connects to 127.0.0.1:PORT and sends the whole of FILE with a plain
 * blocking sendfile loop, the baseline a file-to-socket path is held to.
 * Exits 0 when every byte was handed to the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct stat st;
    off_t off = 0;
    int fd, sock;
    long port;

    if (argc != 3 || (port = strtol(argv[2], NULL, 10)) <= 0 || port > 65535) {
        fprintf(stderr, "usage: sendfile-send FILE PORT\n");
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    sock = socket(AF_INET, SOCK_STREAM, 0);
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (sock < 0 || connect(sock, (struct sockaddr *)&sin, sizeof(sin))) {
        perror("connect");
        return 1;
    }
    while (off < st.st_size) {
        /* The kernel caps one call near 2 GiB; loop for the rest. */
        ssize_t n = sendfile(sock, fd, &off, (size_t)(st.st_size - off));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            perror("sendfile");
            return 1;
        }
    }
    close(sock);
    close(fd);
    return 0;
}
