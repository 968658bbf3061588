#include "client.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct sink {
    char *p;
    size_t n;
} sink;

static size_t collect(char *data, size_t s, size_t n, void *u)
{
    sink *k = u;
    size_t add = s * n;
    char *p = realloc(k->p, k->n + add + 1);
    if (!p)
        return 0;
    memcpy(p + k->n, data, add);
    k->p = p;
    k->n += add;
    p[k->n] = '\0';
    return add;
}

typedef struct source {
    const char *p;
    size_t left, chunk;
} source;

static size_t feed(char *out, size_t s, size_t n, void *u)
{
    source *src = u;
    size_t max = s * n;
    if (src->chunk && max > src->chunk)
        max = src->chunk;
    if (max > src->left)
        max = src->left;
    memcpy(out, src->p, max);
    src->p += max;
    src->left -= max;
    return max;
}

/* Bodies over this are recorded without their text (the status and media
 * type are still checked). */
#define RECORD_BODY_MAX (8u << 20)

static void record_body(json_t *o, const char *key, const char *body, size_t len)
{
    if (!body)
        return;
    json_t *s = len <= RECORD_BODY_MAX ? json_stringn(body, len) : NULL;
    if (s)
        json_object_set_new(o, key, s);
    else
        json_object_set_new(o, len <= RECORD_BODY_MAX ? "not_utf8" : "too_big", json_string(key));
}

/* The contract test's recording: with STORHD_CONTRACT_DIR set, every
 * exchange is appended as one JSON line to DIR/<program>.<pid>.ndjson (one
 * write per line: O_APPEND keeps lines whole across threads), and
 * tests/contract/check_responses.py validates each response against the
 * OpenAPI document. */
static void record(const char *method, const char *path, const char *ctype, const char *body,
                   size_t len, const client_resp *out, const char *resp_ctype, int rc)
{
    const char *dir = getenv("STORHD_CONTRACT_DIR");
    if (!dir || !*dir)
        return;
    json_t *o = json_pack("{sssssisbss}", "test", program_invocation_short_name, "method", method,
                          "status", (int)out->status, "complete", rc == CURLE_OK, "ctype",
                          resp_ctype ? resp_ctype : "");
    json_object_set_new(o, "path", json_stringn(path, strlen(path)));
    if (ctype)
        json_object_set_new(o, "req_ctype", json_string(ctype));
    record_body(o, "req_body", body, len);
    record_body(o, "body", out->body, out->len);
    record_body(o, "headers", out->headers, strlen(out->headers));
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    char file[4096];
    snprintf(file, sizeof file, "%s/%s.%d.ndjson", dir, program_invocation_short_name,
             (int)getpid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) /* a run without the reset fixture */
        fprintf(stderr, "contract: cannot create %s: %s\n", dir, strerror(errno));
    int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || !line) {
        fprintf(stderr, "contract: cannot record to %s: %s\n", file, strerror(errno));
        abort(); /* a test whose responses go unchecked must not pass */
    }
    size_t n = strlen(line);
    line[n] = '\n';
    if (write(fd, line, n + 1) != (ssize_t)(n + 1)) {
        fprintf(stderr, "contract: short write to %s\n", file);
        abort();
    }
    close(fd);
    free(line);
}

int client_do(const char *base, const char *method, const char *path, const char *ctype,
              const char *body, size_t len, const char *extra_header, size_t chunk,
              client_resp *out)
{
    memset(out, 0, sizeof *out);
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    size_t ul = strlen(base) + strlen(path) + 1;
    char *url = malloc(ul);
    strcpy(url, base);
    strcat(url, path);
    sink b = {0}, h = {0};
    source src = {body, len, chunk};
    struct curl_slist *hdrs = NULL;
    char ct[128];
    if (ctype) {
        snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
        hdrs = curl_slist_append(hdrs, ct);
    }
    for (const char *x = extra_header; x && *x;) { /* several, one per line */
        size_t n = strcspn(x, "\n");
        char one[4096];
        snprintf(one, sizeof one, "%.*s", (int)n, x);
        hdrs = curl_slist_append(hdrs, one);
        x += n + (x[n] == '\n');
    }
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, feed);
        curl_easy_setopt(c, CURLOPT_READDATA, &src);
        if (chunk)
            hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        else
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = b.p ? b.p : calloc(1, 1);
    out->len = b.n;
    out->headers = h.p ? h.p : calloc(1, 1);
    if (rc == CURLE_OK || out->status) {
        char *resp_ctype = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &resp_ctype);
        record(method, path, ctype, body, len, out, resp_ctype, (int)rc);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    free(url);
    return rc == CURLE_OK ? 0 : -(int)rc;
}

int client_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

long client_json(const char *base, const char *method, const char *path, const char *body,
                 json_t **out)
{
    client_resp r;
    int rc = client_do(base, method, path, body ? "application/json" : NULL, body,
                       body ? strlen(body) : 0, NULL, 0, &r);
    long status = rc == 0 ? r.status : 0;
    if (out)
        *out = status ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    client_free(&r);
    return status;
}

const char *client_header(const client_resp *r, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    for (const char *p = r->headers; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            size_t l = strcspn(v, "\r\n");
            if (l >= cap)
                l = cap - 1;
            memcpy(out, v, l);
            out[l] = '\0';
            return out;
        }
    }
    return NULL;
}

void client_free(client_resp *r)
{
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof *r);
}
