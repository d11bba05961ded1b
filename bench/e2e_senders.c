/*
 * e2e_senders.c - who the `e2e` suite measures. Adding a sender or a server
 * is adding a line here (the tokens are described in e2e.h).
 */
#include "e2e.h"

const struct e2e_sender e2e_senders[] = {
    /*
     * weir first: the first sender that runs is the reference of the
     * ratios, and the goals are stated against weir. A weir that is not
     * built shows as missing. The daemon reads its pipeline from a config
     * file, which a shell writes next to the test file for each run.
     */
    {"weir-pipe",
     {"{builddir}/daemon/weir", "pipe", "file:{file}", "tcp:127.0.0.1:{port}"}},
    {"weir-daemon",
     {"sh", "-c",
      "printf '[pipeline e2e]\\nsource = file:%s\\nsink = tcp:127.0.0.1:%s\\n' "
      "\"$1\" \"$2\" >\"$1.conf\" && exec \"$3\" -c \"$1.conf\"",
      "sh", "{file}", "{port}", "{builddir}/daemon/weir"}},
    /* The same two on the epoll engine, as in a container that denies
     * io_uring. */
    {"weir-pipe-epoll",
     {"env", "WEIR_ENGINE=epoll", "{builddir}/daemon/weir", "pipe",
      "file:{file}", "tcp:127.0.0.1:{port}"}},
    {"weir-daemon-epoll",
     {"sh", "-c",
      "printf '[pipeline e2e]\\nsource = file:%s\\nsink = tcp:127.0.0.1:%s\\n' "
      "\"$1\" \"$2\" >\"$1.conf\" && WEIR_ENGINE=epoll exec \"$3\" -c "
      "\"$1.conf\"",
      "sh", "{file}", "{port}", "{builddir}/daemon/weir"}},
    {"socat",
     {"socat", "-u", "-b", "65536", "FILE:{file}", "TCP:127.0.0.1:{port}"}},
    {"nc", {"nc", "-N", "127.0.0.1", "{port}", "<{file}"}},
    {"sendfile", {"{bindir}/sendfile-send", "{file}", "{port}"}},
    {"node", {"node", "{nodedir}/pipeline.mjs", "{file}", "{port}"}},
};
const size_t e2e_nsenders = sizeof(e2e_senders) / sizeof(e2e_senders[0]);

/* File servers for the many-clients case: each serves {file} whole to
 * every client that connects to 127.0.0.1:{port}. socat opens the file in
 * each forked child (the listen address comes first, -U sends right to
 * left), so every client reads from offset 0. */
const struct e2e_sender e2e_servers[] = {
    /* weir's file server: one stream per client, each from byte 0. */
    {"weir",
     {"sh", "-c",
      "printf '[pipeline e2e]\\nsource = file:%s\\n"
      "sink = tcp-listen:127.0.0.1:%s,backlog=1024\\n' "
      "\"$1\" \"$2\" >\"$1.serve.conf\" && exec \"$3\" -c \"$1.serve.conf\"",
      "sh", "{file}", "{port}", "{builddir}/daemon/weir"}},
    {"weir-epoll",
     {"sh", "-c",
      "printf '[pipeline e2e]\\nsource = file:%s\\n"
      "sink = tcp-listen:127.0.0.1:%s,backlog=1024\\n' "
      "\"$1\" \"$2\" >\"$1.serve.conf\" && WEIR_ENGINE=epoll exec \"$3\" "
      "-c \"$1.serve.conf\"",
      "sh", "{file}", "{port}", "{builddir}/daemon/weir"}},
    {"socat-fork",
     {"socat", "-U", "-b", "65536",
      "TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=1024",
      "OPEN:{file},rdonly"}},
};
const size_t e2e_nservers = sizeof(e2e_servers) / sizeof(e2e_servers[0]);
