#include "schema.h"

#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {"string", "int", "float", "bool", "mixed"};

void schema_free(schema *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->f[i].name);
    free(s->f);
    s->f = NULL;
    s->n = 0;
}

static bool flag(const json_t *o, const char *k, bool *out, storh_err *err, const char *field)
{
    json_t *v = json_object_get(o, k);
    if (v && !json_is_boolean(v)) {
        storh_err_set(err, STORH_EINVAL, "fields.%.64s.%s: must be true or false.", field, k);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

int schema_parse(const json_t *j, schema *s, storh_err *err)
{
    memset(s, 0, sizeof *s);
    json_t *fields = json_object_get(j, "fields");
    if (!json_is_object(fields))
        return storh_err_set(err, STORH_EINVAL, "Schema body needs a \"fields\" object.");
    s->f = calloc(json_object_size(fields) + 1, sizeof *s->f);
    if (!s->f)
        return storh_err_set(err, STORH_ENOMEM, "Out of memory.");
    const char *name;
    json_t *def;
    json_object_foreach (fields, name, def) {
        if (strspn(name, " \t\n\r\v") == strlen(name)) {
            schema_free(s);
            return storh_err_set(err, STORH_EINVAL, "Schema field cannot be empty.");
        }
        json_t *t = json_object_get(def, "type");
        const char *tn = json_is_string(t) ? json_string_value(t) : "mixed";
        size_t k = 0;
        while (k < 5 && strcmp(type_names[k], tn))
            k++;
        if (!json_is_object(def) || k == 5 || (t && !json_is_string(t))) {
            schema_free(s);
            return storh_err_set(err, STORH_EINVAL,
                                 "fields.%.64s.type: must be string, int, float, bool or mixed.",
                                 name);
        }
        schema_field *f = &s->f[s->n];
        if (!flag(def, "required", &f->required, err, name) ||
            !flag(def, "index", &f->index, err, name) ||
            !flag(def, "unique", &f->unique, err, name) ||
            !flag(def, "range", &f->range, err, name)) {
            schema_free(s);
            return err ? err->code : STORH_EINVAL;
        }
        f->name = strdup(name);
        f->type = (schema_type)k;
        f->index = f->index || f->unique || f->range;
        s->n++;
    }
    return 0;
}

int schema_validate(const schema *s, const json_t *data, storh_err *err)
{
    for (size_t i = 0; i < s->n; i++) {
        const schema_field *f = &s->f[i];
        json_t *v = json_is_object(data) ? json_object_get(data, f->name) : NULL;
        if (!v) {
            if (f->required)
                return storh_err_set(err, STORH_ESCHEMA, "Missing required schema field: %s",
                                     f->name);
            continue;
        }
        if (json_is_null(v)) /* every type is nullable */
            continue;
        bool ok = f->type == SCHEMA_MIXED || (f->type == SCHEMA_STRING && json_is_string(v)) ||
                  (f->type == SCHEMA_INT && json_is_integer(v)) ||
                  (f->type == SCHEMA_FLOAT && json_is_number(v)) ||
                  (f->type == SCHEMA_BOOL && json_is_boolean(v));
        if (!ok)
            return storh_err_set(err, STORH_ESCHEMA, "Schema field %s must be %s.", f->name,
                                 type_names[f->type]);
    }
    return 0;
}

json_t *schema_to_json(const schema *s)
{
    json_t *fields = json_object();
    for (size_t i = 0; i < s->n; i++) {
        const schema_field *f = &s->f[i];
        json_object_set_new(fields, f->name,
                            json_pack("{sssbsbsbsb}", "type", type_names[f->type], "required",
                                      f->required, "index", f->index, "unique", f->unique, "range",
                                      f->range));
    }
    return json_pack("{so}", "fields", fields);
}

size_t schema_index_defs(const schema *s, idxdef **defs)
{
    *defs = calloc(s->n + 1, sizeof **defs);
    size_t n = 0;
    for (size_t i = 0; *defs && i < s->n; i++) {
        if (!s->f[i].index)
            continue;
        (*defs)[n++] = (idxdef){s->f[i].name, s->f[i].unique, s->f[i].range};
    }
    return n;
}
