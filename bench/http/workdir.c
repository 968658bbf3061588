#include "workdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"

void workdir_paths(const char *work, int n, char *root, char *disk, size_t cap)
{
    snprintf(root, cap, "%s/root-%d", work, n);
    snprintf(disk, cap, "%s/root-%d-disk", work, n);
}

void workdir_remove(const char *dir)
{
    const char *rm[] = {"rm", "-rf", dir, NULL};
    spawn_wait(spawn_pinned(NULL, rm, NULL, NULL));
}

void workdir_remove_all(const char *work, int total)
{
    for (int n = 1; n <= total; n++) {
        char root[PATH_MAX], disk[PATH_MAX];
        workdir_paths(work, n, root, disk, sizeof root);
        workdir_remove(root);
        workdir_remove(disk);
    }
    int fd = open(work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && syncfs(fd) != 0)
        fprintf(stderr, "storh-trial: syncfs %s: %s\n", work, strerror(errno));
    if (fd >= 0)
        close(fd);
}
