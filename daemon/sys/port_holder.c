/*
 * port_holder.c - see port_holder.h. The kernel names a socket by inode:
 * /proc/net/tcp{,6} gives the listening socket's, and the process that
 * holds it is the one with an fd that links to socket:[INODE]. Processes
 * of other users are not readable unless root; then none is found.
 */
#include "sys/port_holder.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pid_t port_holder(uint16_t port, char *name, size_t len)
{
    static const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    unsigned long inode = 0;
    char want[32], line[512];
    DIR *procs;
    struct dirent *pe;
    pid_t found = 0;

    for (size_t t = 0; t < 2 && !inode; t++) {
        FILE *f = fopen(tables[t], "re");

        if (!f)
            continue;
        while (!inode && fgets(line, sizeof(line), f)) {
            char local[64];
            unsigned st;
            unsigned long ino;
            char *colon;

            if (sscanf(line, "%*d: %63s %*s %x %*s %*s %*s %*s %*s %lu", local,
                       &st, &ino) != 3 ||
                st != 0x0A) /* TCP_LISTEN */
                continue;
            colon = strrchr(local, ':');
            if (colon && strtoul(colon + 1, NULL, 16) == port)
                inode = ino;
        }
        fclose(f);
    }
    if (!inode || !(procs = opendir("/proc")))
        return 0;
    snprintf(want, sizeof(want), "socket:[%lu]", inode);
    while (!found && (pe = readdir(procs))) {
        char dpath[300], lpath[600], target[64];
        DIR *fds;
        struct dirent *fe;

        if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
            continue;
        snprintf(dpath, sizeof(dpath), "/proc/%s/fd", pe->d_name);
        if (!(fds = opendir(dpath)))
            continue;
        while (!found && (fe = readdir(fds))) {
            ssize_t n;

            snprintf(lpath, sizeof(lpath), "%s/%s", dpath, fe->d_name);
            n = readlink(lpath, target, sizeof(target) - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strcmp(target, want) == 0)
                found = (pid_t)atoi(pe->d_name);
        }
        closedir(fds);
    }
    closedir(procs);
    if (found) {
        char cpath[64];
        FILE *f;

        snprintf(cpath, sizeof(cpath), "/proc/%d/comm", (int)found);
        name[0] = '\0';
        if ((f = fopen(cpath, "re"))) {
            if (fgets(name, (int)len, f))
                name[strcspn(name, "\n")] = '\0';
            fclose(f);
        }
    }
    return found;
}
