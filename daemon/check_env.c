/*
 * check_env.c - what `weir --check` looks at beyond the file: whether the
 * service will meet what the config names. As root, with the service's
 * user (weir) on the system, file access is judged for that user, since
 * weir.service runs as it: a source it can read, a sink directory it can
 * write. A listen address must be bindable, or held by a running weir or
 * by systemd (weir.socket); a port below 1024 is the socket unit's, as
 * the service has no capabilities. --check --syntax-only skips all this.
 */
#include "check_env.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "conf/address.h"
#include "conf/sockaddr.h"
#include "sys/log.h"
#include "sys/port_holder.h"

/* weir.service's User=; WEIR_SERVICE_USER names another (tests). */
static const char *service_user(void)
{
    const char *u = getenv("WEIR_SERVICE_USER");

    return u && *u ? u : "weir";
}

/* Who the checks are for. */
struct who {
    bool service; /* judged by mode bits for the service's user */
    uid_t uid;
    gid_t groups[64];
    int ngroups;
    const char *name;
};

struct env {
    struct who who;
    struct conf_diag *diag;
    const char *control; /* the config's control socket, or NULL */
    bool asked;
    char *running; /* the running weir's status document, or NULL */
};

/* Whether the weir that answers on the config's control socket serves
 * a (a listen address it holds, which a reload hands over). */
static bool running_holds(struct env *e, const struct weir_address *a,
                          const char *role)
{
    char want[600];

    if (!e->asked) {
        e->asked = true;
        if (!e->control || ctl_ask(e->control, "status json\n", &e->running))
            e->running = NULL;
    }
    if (!e->running)
        return false;
    snprintf(want, sizeof(want), "\"%s\":\"%s\"",
             strcmp(role, "metrics") == 0  ? "metrics"
             : strcmp(role, "source") == 0 ? "source"
                                           : "sink",
             a->text);
    return strstr(e->running, want) != NULL;
}

__attribute__((format(printf, 3, 4))) static void
env_error(struct env *e, const struct conf_loc *loc, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    config_error(e->diag, loc, "%s", msg);
}

static bool in_groups(const struct who *w, gid_t g)
{
    for (int i = 0; i < w->ngroups; i++)
        if (w->groups[i] == g)
            return true;
    return false;
}

/* The mode bits say the user may (mask: 4 read, 2 write, 1 search). */
static bool bits_allow(const struct who *w, const struct stat *st, int mask)
{
    mode_t m = st->st_mode;
    int have = st->st_uid == w->uid       ? (int)(m >> 6) & 7
               : in_groups(w, st->st_gid) ? (int)(m >> 3) & 7
                                          : (int)m & 7;

    return (have & mask) == mask;
}

/* Whether w may do mask to path, its directories searchable on the way.
 * 0, or the errno the user would see. */
static int may(const struct who *w, const char *path, int mask)
{
    char buf[PATH_MAX];
    struct stat st;

    if (!w->service) {
        int amode = (mask & 4 ? R_OK : 0) | (mask & 2 ? W_OK : 0) |
                    (mask & 1 ? X_OK : 0);

        return access(path, amode) == 0 ? 0 : errno;
    }
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return ENAMETOOLONG;
    /* Each ancestor must let the user through. */
    for (char *slash = strchr(buf + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (stat(buf, &st) != 0)
            return errno;
        if (!bits_allow(w, &st, 1)) {
            *slash = '/';
            return EACCES;
        }
        *slash = '/';
    }
    if (stat(path, &st) != 0)
        return errno;
    return bits_allow(w, &st, mask) ? 0 : EACCES;
}

static const char *for_whom(const struct env *e)
{
    static char buf[64];

    if (!e->who.service)
        return "";
    snprintf(buf, sizeof(buf), " by user %s (the service's)", e->who.name);
    return buf;
}

static void check_source(struct env *e, const struct weir_pipeline *p)
{
    const struct weir_address *a = p->source;
    int err;

    if (!a || a->kind != ADDR_FILE)
        return;
    err = may(&e->who, a->path, 4);
    if (err == ENOENT && (p->follow || a->follow))
        return; /* waited for; config_check saw its directory */
    if (err)
        env_error(e, &a->loc, "source: '%s' cannot be read%s: %s", a->path,
                  for_whom(e), strerror(err));
}

static void check_sink_file(struct env *e, const struct weir_address *a)
{
    char dir[PATH_MAX], *slash;
    int err = may(&e->who, a->path, 2);

    if (err != ENOENT) {
        if (err)
            env_error(e, &a->loc, "sink: '%s' cannot be written%s: %s", a->path,
                      for_whom(e), strerror(err));
        return;
    }
    snprintf(dir, sizeof(dir), "%s", a->path);
    slash = strrchr(dir, '/');
    if (!slash)
        return;
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    err = may(&e->who, dir, 3);
    if (err)
        env_error(e, &a->loc,
                  "sink: '%s' cannot be created: its directory '%s' is not "
                  "writable%s: %s",
                  a->path, dir, for_whom(e), strerror(err));
}

/* Whether port's listener belongs to weir or to systemd (weir.socket),
 * which a start or reload of this config takes over. The holder's pid and
 * name go to pid and name. */
static bool held_by_us(uint16_t port, pid_t *pid, char *name, size_t len)
{
    *pid = port_holder(port, name, len);
    return *pid && (strcmp(name, "weir") == 0 || strcmp(name, "systemd") == 0);
}

static void check_listen(struct env *e, const struct weir_address *a,
                         const char *role)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    char name[64] = "";
    int fd, one = 1, rc, err = 0;
    pid_t pid;

    if (a->kind != ADDR_TCP_LISTEN)
        return;
    rc = sockaddr_resolve(a, &ss, &sl);
    if (rc) {
        env_error(e, &a->loc, "%s: %s does not resolve: %s", role, a->text,
                  strerror(-rc));
        return;
    }
    if (running_holds(e, a, role))
        return; /* the running weir: a reload hands it over */
    if (e->who.service && a->port < 1024) {
        if (held_by_us(a->port, &pid, name, sizeof(name)))
            return;
        env_error(e, &a->loc,
                  "%s: port %u needs weir.socket (socket activation): "
                  "weir.service has no capabilities",
                  role, a->port);
        return;
    }
    /* Bind first: the holder is looked up only for a port in use, since
     * reading /proc/net/tcp costs far more than a bind. */
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0)
        err = errno;
    close(fd);
    if (!err)
        return;
    if (err == EADDRINUSE && held_by_us(a->port, &pid, name, sizeof(name)))
        return; /* another weir's view, or weir.socket */
    if (err == EADDRINUSE && pid)
        env_error(e, &a->loc, "%s: %s is in use by pid %d (%s)", role, a->text,
                  (int)pid, name);
    else
        env_error(e, &a->loc, "%s: cannot listen on %s: %s", role, a->text,
                  strerror(err));
}

static void who_init(struct who *w)
{
    struct passwd *pw;

    *w = (struct who){.uid = geteuid(), .name = ""};
    if (geteuid() != 0 || !(pw = getpwnam(service_user())))
        return;
    w->service = true;
    w->uid = pw->pw_uid;
    w->name = service_user();
    w->ngroups = (int)(sizeof(w->groups) / sizeof(w->groups[0]));
    if (getgrouplist(w->name, pw->pw_gid, w->groups, &w->ngroups) < 0) {
        w->groups[0] = pw->pw_gid;
        w->ngroups = 1;
    }
}

void check_env(const struct weir_config *conf, struct conf_diag *diag)
{
    struct env e = {.control = conf->daemon.control_socket, .diag = diag};

    who_init(&e.who);
    for (size_t i = 0; i < conf->npipelines; i++) {
        const struct weir_pipeline *p = conf->pipelines[i];

        check_source(&e, p);
        if (p->source)
            check_listen(&e, p->source, "source");
        for (size_t j = 0; j < p->nsinks; j++) {
            if (p->sinks[j]->kind == ADDR_FILE)
                check_sink_file(&e, p->sinks[j]);
            check_listen(&e, p->sinks[j], "sink");
        }
    }
    if (conf->daemon.metrics)
        check_listen(&e, conf->daemon.metrics, "metrics");
    free(e.running);
}
