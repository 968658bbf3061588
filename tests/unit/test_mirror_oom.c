/* test_mirror_oom: mirror_new when a copy of a name fails (out of memory).
 * This binary defines its own strdup, which the mirror's static library
 * resolves to at link time; it fails on the Nth call when told to. */
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "mirror.h"

static int strdup_calls, strdup_fail_at;

char *strdup(const char *s)
{
    if (strdup_fail_at && ++strdup_calls == strdup_fail_at)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* Every copy mirror_new makes (its name, driver, prefix and target, and the
 * name and table of each collection) may fail: each failure is a clean
 * STORH_ENOMEM with nothing built, and past the last copy it succeeds. */
TEST(every_failed_copy_in_mirror_new_is_out_of_memory)
{
    json_t *cfg =
        json_pack("{sssssss{s{ss}s{ss}}}", "driver", "sqlite", "path", "/nonexistent/m.db",
                  "prefix", "p_", "collections", "pages", "kind", "doc", "events", "kind", "log");
    CHECK(cfg != NULL);
    int succeeded_at = 0;
    for (int k = 1; k <= 32 && !succeeded_at; k++) {
        strdup_calls = 0;
        strdup_fail_at = k;
        mirror *m = NULL;
        storh_err err;
        int rc = mirror_new("m", cfg, &m, &err);
        strdup_fail_at = 0;
        if (rc == 0) {
            succeeded_at = k;
            CHECK_INT(m->n, 2);
            CHECK_STR(m->c[1]->table, "p_events");
            mirror_free(m);
        } else {
            CHECK_INT(rc, STORH_ENOMEM);
            CHECK_STR(err.msg, "Out of memory.");
        }
    }
    CHECK(succeeded_at > 4); /* the four mirror fields and two per collection */
    json_decref(cfg);
}

static const test_case tests[] = {
    {"every_failed_copy_in_mirror_new_is_out_of_memory",
     every_failed_copy_in_mirror_new_is_out_of_memory},
};
TEST_MAIN(tests)
