/* schema: storh's Schema (FORMAT.md 6): typed fields (string, int, float,
 * bool, mixed), required, and index/unique/range flags, validated in
 * declaration order before any write. storhd keeps a collection's schema in
 * <coll>/.storh/schema.jsonc (storh itself declares schemas in code):
 *   {"fields":{"title":{"type":"string","required":true,"index":true}, ...}}
 * A schema owns its strings. */
#ifndef STORH_SCHEMA_H
#define STORH_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "docindex.h"
#include "storh_err.h"

typedef enum { SCHEMA_STRING, SCHEMA_INT, SCHEMA_FLOAT, SCHEMA_BOOL, SCHEMA_MIXED } schema_type;

typedef struct schema_field {
    char *name;
    schema_type type;
    bool required, index, unique, range;
} schema_field;

typedef struct schema {
    schema_field *f;
    size_t n;
} schema;

int schema_parse(const json_t *j, schema *s, storh_err *err);
void schema_free(schema *s);
/* STORH_ESCHEMA with "Missing required schema field: f" or "Schema field f
 * must be <type>." on the first failure. */
int schema_validate(const schema *s, const json_t *data, storh_err *err);
/* New reference. */
json_t *schema_to_json(const schema *s);
/* The index definitions the schema implies (unique and range imply index).
 * *defs is allocated (free it; the strings are the schema's). */
size_t schema_index_defs(const schema *s, idxdef **defs);

#endif
