#include "mmemo.h"

#include <string.h>

typedef struct mmemo_ent {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
    uint32_t gen;
    char hash[32];
} mmemo_ent;

static bool ready(mmemo *m)
{
    if (!m->ready && idmap_init(&m->map, sizeof(mmemo_ent)) == 0)
        m->ready = true;
    return m->ready;
}

void mmemo_free(mmemo *m)
{
    if (m->ready)
        idmap_free(&m->map);
    memset(m, 0, sizeof *m);
}

static bool same_state(const mmemo_ent *e, const struct stat *st)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtim.tv_sec == st->st_mtim.tv_sec && e->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           e->ctim.tv_sec == st->st_ctim.tv_sec && e->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

const char *mmemo_hash(mmemo *m, const char *id, const struct stat *st)
{
    if (!m->ready)
        return NULL;
    mmemo_ent *e = idmap_get(&m->map, id);
    if (!e || !same_state(e, st))
        return NULL;
    e->gen = m->gen;
    return e->hash;
}

void mmemo_put(mmemo *m, const char *id, const struct stat *st, const char *hash)
{
    if (!ready(m) || (m->map.len >= MMEMO_MAX && !idmap_get(&m->map, id)))
        return;
    mmemo_ent *e = idmap_put(&m->map, id, NULL);
    if (!e)
        return;
    *e = (mmemo_ent){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim, m->gen, {0}};
    memcpy(e->hash, hash, sizeof e->hash);
}

void mmemo_reserve(mmemo *m, size_t n)
{
    if (ready(m))
        idmap_reserve(&m->map, n < MMEMO_MAX ? n : MMEMO_MAX);
}

void mmemo_forget(mmemo *m, const char *id)
{
    if (m->ready)
        idmap_del(&m->map, id);
}

void mmemo_walk_begin(mmemo *m)
{
    m->gen++;
}

void mmemo_walk_end(mmemo *m)
{
    if (!m->ready)
        return;
    size_t pos = 0;
    const char *id;
    void *v;
    /* a delete only marks its slot: the walk over the slots goes on */
    while (idmap_next(&m->map, &pos, &id, &v))
        if (((mmemo_ent *)v)->gen != m->gen)
            idmap_del(&m->map, id);
}
