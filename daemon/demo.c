/*
 * demo.c - see demo.h.
 */
#include "demo.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* True when the running executable is the installed one: the build tree's
 * copy is the same file until `meson install` copies it, so only its
 * place tells them apart. */
static bool running_installed(void)
{
    char exe[PATH_MAX], installed[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0 || realpath(WEIR_INSTALLED_BIN, installed) == NULL)
        return false;
    exe[n] = '\0';
    return strcmp(exe, installed) == 0;
}

const char *demo_dir(void)
{
    const char *env = getenv("WEIR_DEMO_DIR");

    if (env != NULL && *env != '\0')
        return env;
    return running_installed() ? WEIR_INSTALLED_DEMO_DIR : WEIR_SOURCE_DEMO_DIR;
}
