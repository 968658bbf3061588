#include "idset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void idset_add(idset *v, const char *id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap * 2 + 64;
        void *p = realloc(v->id, cap * sizeof *v->id);
        if (!p)
            abort();
        v->id = p;
        v->cap = cap;
    }
    snprintf(v->id[v->n++], UUID7_LEN + 1, "%s", id);
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

void idset_sort(idset *v)
{
    if (v->n) /* qsort(NULL, 0) is undefined */
        qsort(v->id, v->n, sizeof *v->id, cmp_id);
}

bool idset_has(const idset *v, const char *id)
{
    return v->n && bsearch(id, v->id, v->n, sizeof *v->id, cmp_id) != NULL;
}

void idset_free(idset *v)
{
    free(v->id);
    *v = (idset){0};
}
