/* replay: runs a libFuzzer driver's LLVMFuzzerTestOneInput over files
 * without libFuzzer, so the seed corpus and every input that ever crashed a
 * driver (fuzz/regressions/<target>/) stay tests in the normal and the
 * sanitizer builds under ctest.
 *   replay_<target> DIR|FILE ...   (a missing DIR is skipped) */
#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    size_t got = data ? fread(data, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    fclose(f);
    if (!data || got != (size_t)(n > 0 ? n : 0)) {
        free(data);
        return -1;
    }
    LLVMFuzzerTestOneInput(data, got);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    long replayed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0) {
                fprintf(stderr, "replay: cannot read %s\n", argv[i]);
                return 1;
            }
            replayed++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            if (replay_file(path) != 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                closedir(d);
                return 1;
            }
            replayed++;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %ld inputs\n", replayed);
    return replayed > 0 ? 0 : 1;
}
