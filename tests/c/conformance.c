/* The conformance table (tests/conformance/cases.txt) through libedgefirst_tensor, from C99.
 * Prints one line per case, "name: result", as the Rust and Python runners do; exits non-zero when
 * a result differs from the table's expected column. Usage: conformance CASES_FILE */
#include <edgefirst/tensor.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RW EF_ACCESS_READWRITE
#define OUT_LEN 256

static void err(char *out, int rc) { snprintf(out, OUT_LEN, "err %s", ef_status_name(rc)); }

#define CK(call)                                                                                    \
    do {                                                                                            \
        int rc_ = (call);                                                                           \
        if (rc_ != EF_OK) {                                                                         \
            err(out, rc_);                                                                          \
            return;                                                                                 \
        }                                                                                           \
    } while (0)

static uint32_t dtype_code(const char *s) {
    static const char *names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"};
    for (uint32_t i = 0; i < 11; i++)
        if (strcmp(names[i], s) == 0) return i;
    fprintf(stderr, "dtype %s\n", s);
    exit(2);
}

static int32_t memory_code(const char *s) { return strcmp(s, "shm") == 0 ? EF_MEMORY_SHM : EF_MEMORY_MEM; }

static uint32_t format_code(const char *s) {
    if (strcmp(s, "RGB") == 0) return EF_FORMAT_RGB;
    if (strcmp(s, "RGBA") == 0) return EF_FORMAT_RGBA;
    if (strcmp(s, "NV12") == 0) return EF_FORMAT_NV12;
    fprintf(stderr, "format %s\n", s);
    exit(2);
}

static size_t dims(const char *s, size_t *d) {
    size_t n = 0;
    const char *p = s;
    while (*p && n < EF_MAX_DIMS) {
        d[n++] = (size_t)strtoull(p, (char **)&p, 10);
        if (*p == ',') p++;
    }
    return n;
}

/* "a,b,c" of n values. */
static void join_u(char *dst, size_t cap, const uint64_t *v, size_t n) {
    size_t at = 0;
    dst[0] = 0;
    for (size_t i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(dst + at, cap - at, i ? ",%llu" : "%llu", (unsigned long long)v[i]);
}

static void join_i(char *dst, size_t cap, const int64_t *v, size_t n) {
    size_t at = 0;
    dst[0] = 0;
    for (size_t i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(dst + at, cap - at, i ? ",%lld" : "%lld", (long long)v[i]);
}

struct geometry {
    char shape[64], strides[64];
    uint64_t size;
};

static void geometry(ef_tensor t, struct geometry *g) {
    size_t n = 0;
    uint64_t shape[EF_MAX_DIMS];
    int64_t strides[EF_MAX_DIMS];
    ef_tensor_ndim(t, &n);
    ef_tensor_shape(t, shape, EF_MAX_DIMS);
    ef_tensor_strides(t, strides, EF_MAX_DIMS);
    ef_tensor_size(t, &g->size);
    join_u(g->shape, sizeof g->shape, shape, n);
    join_i(g->strides, sizeof g->strides, strides, n);
}

static int fill(ef_tensor t) {
    ef_map m;
    int rc = ef_tensor_map(t, RW, &m);
    if (rc != EF_OK) return rc;
    for (size_t i = 0; i < m.size; i++) ((uint8_t *)m.data)[i] = (uint8_t)i;
    return ef_tensor_unmap(&m);
}

static uint64_t byte_sum(ef_tensor t) {
    ef_map m;
    uint64_t s = 0;
    if (ef_tensor_map(t, EF_ACCESS_READ, &m) != EF_OK) return 0;
    for (size_t i = 0; i < m.size; i++) s += ((uint8_t *)m.data)[i];
    ef_tensor_unmap(&m);
    return s;
}

static uint64_t inode(ef_tensor t) {
    int fd = -1;
    struct stat st;
    if (ef_tensor_clone_fd(t, &fd) != EF_OK) return 0;
    fstat(fd, &st);
    close(fd);
    return (uint64_t)st.st_ino;
}

static uint64_t identity(ef_tensor t) {
    uint64_t id = 0;
    ef_tensor_identity(t, &id);
    return id;
}

static int new_tensor(const char *dt, const char *shape, const char *mem, uint32_t access, ef_tensor *t) {
    size_t d[EF_MAX_DIMS];
    size_t n = dims(shape, d);
    return ef_tensor_new(d, n, dtype_code(dt), memory_code(mem), access, t);
}

static void run(const char *op, char **a, char *out) {
    ef_tensor t, v, back;
    struct geometry g;
    if (strcmp(op, "new") == 0) {
        uint32_t d;
        CK(new_tensor(a[0], a[1], a[2], RW, &t));
        geometry(t, &g);
        ef_tensor_dtype(t, &d);
        ef_tensor_free(t);
        snprintf(out, OUT_LEN, "ok shape=%s strides=%s size=%llu dtype=%u", g.shape, g.strides,
                 (unsigned long long)g.size, d);
    } else if (strcmp(op, "image") == 0) {
        uint32_t f;
        CK(ef_tensor_image((uint32_t)atoi(a[1]), (uint32_t)atoi(a[2]), format_code(a[0]), EF_DTYPE_U8, RW,
                           memory_code(a[3]), &t));
        geometry(t, &g);
        ef_tensor_format(t, &f);
        ef_tensor_free(t);
        snprintf(out, OUT_LEN, "ok shape=%s strides=%s size=%llu format=%u", g.shape, g.strides,
                 (unsigned long long)g.size, f);
    } else if (strcmp(op, "view") == 0) {
        CK(ef_tensor_image((uint32_t)atoi(a[1]), (uint32_t)atoi(a[2]), format_code(a[0]), EF_DTYPE_U8, RW,
                           EF_MEMORY_MEM, &t));
        CK(ef_tensor_view(t, strtoull(a[3], NULL, 10), strtoull(a[4], NULL, 10), strtoull(a[5], NULL, 10),
                          strtoull(a[6], NULL, 10), &v));
        geometry(v, &g);
        snprintf(out, OUT_LEN, "ok shape=%s strides=%s same_identity=%d", g.shape, g.strides,
                 identity(v) == identity(t));
        ef_tensor_free(v);
        ef_tensor_free(t);
    } else if (strcmp(op, "batch") == 0) {
        CK(new_tensor(a[0], a[1], a[2], RW, &t));
        fill(t);
        CK(ef_tensor_batch(t, strtoull(a[3], NULL, 10), &v));
        geometry(v, &g);
        snprintf(out, OUT_LEN, "ok shape=%s strides=%s sum=%llu same_identity=%d", g.shape, g.strides,
                 (unsigned long long)byte_sum(v), identity(v) == identity(t));
        ef_tensor_free(v);
        ef_tensor_free(t);
    } else if (strcmp(op, "map_sum") == 0) {
        int rc;
        CK(new_tensor(a[0], a[1], a[2], RW, &t));
        rc = fill(t);
        if (rc != EF_OK) {
            err(out, rc);
            return;
        }
        snprintf(out, OUT_LEN, "ok sum=%llu", (unsigned long long)byte_sum(t));
        ef_tensor_free(t);
    } else if (strcmp(op, "access_denied") == 0) {
        CK(new_tensor(a[0], a[1], a[2], EF_ACCESS_READ, &t));
        err(out, fill(t));
        ef_tensor_free(t);
    } else if (strcmp(op, "stale") == 0) {
        size_t n;
        CK(new_tensor("u8", "4", "mem", RW, &t));
        ef_tensor_free(t);
        CK(ef_tensor_ndim(t, &n));
        snprintf(out, OUT_LEN, "ok");
    } else if (strcmp(op, "double_free") == 0) {
        CK(new_tensor("u8", "4", "mem", RW, &t));
        ef_tensor_free(t);
        CK(ef_tensor_free(t));
        snprintf(out, OUT_LEN, "ok");
    } else if (strcmp(op, "forged") == 0) {
        size_t n;
        ef_tensor f = {1u << 20, 99};
        CK(ef_tensor_ndim(f, &n));
        snprintf(out, OUT_LEN, "ok");
    } else if (strcmp(op, "blob") == 0) {
        uint32_t mode = strcmp(a[0], "inline") == 0 ? EF_BLOB_INLINE : EF_BLOB_REFERENCE;
        size_t len = 0;
        uint8_t *buf;
        int rc;
        char tail[32];
        CK(new_tensor(a[1], a[2], a[3], RW, &t));
        fill(t);
        rc = ef_tensor_export_blob(t, mode, NULL, 0, &len);
        if (rc != EF_TOO_SMALL) {
            ef_tensor_free(t);
            err(out, rc);
            return;
        }
        buf = malloc(len);
        CK(ef_tensor_export_blob(t, mode, buf, len, &len));
        CK(ef_tensor_import_blob(buf, len, &back));
        free(buf);
        geometry(back, &g);
        if (mode == EF_BLOB_INLINE)
            snprintf(tail, sizeof tail, "new_identity=%d", identity(back) != identity(t));
        else
            snprintf(tail, sizeof tail, "same_inode=%d", inode(back) == inode(t));
        snprintf(out, OUT_LEN, "ok shape=%s strides=%s sum=%llu %s", g.shape, g.strides,
                 (unsigned long long)byte_sum(back), tail);
        ef_tensor_free(back);
        ef_tensor_free(t);
    } else if (strcmp(op, "nv12_planes") == 0) {
        unsigned w = (unsigned)atoi(a[0]), h = (unsigned)atoi(a[1]);
        ef_tensor luma, chroma;
        ef_planes p;
        int fl = -1, fc = -1, rc;
        uint32_t f;
        size_t len = 0, dl[2] = {h, w}, dc[2] = {h / 2, w};
        uint8_t *buf;
        CK(ef_tensor_new(dl, 2, EF_DTYPE_U8, EF_MEMORY_SHM, RW, &luma));
        CK(ef_tensor_new(dc, 2, EF_DTYPE_U8, EF_MEMORY_SHM, RW, &chroma));
        CK(ef_tensor_clone_fd(luma, &fl));
        CK(ef_tensor_clone_fd(chroma, &fc));
        CK(ef_planes_init(&p));
        CK(ef_planes_add(&p, fl, 0, w));
        CK(ef_planes_add(&p, fc, 0, w));
        CK(ef_tensor_from_planes(&p, w, h, EF_FORMAT_NV12, RW, &t));
        close(fl);
        close(fc);
        geometry(t, &g);
        ef_tensor_format(t, &f);
        ef_tensor_export_blob(t, EF_BLOB_INLINE, NULL, 0, &len);
        buf = malloc(len);
        rc = ef_tensor_export_blob(t, EF_BLOB_INLINE, buf, len, &len);
        if (rc == EF_OK) rc = ef_tensor_import_blob(buf, len, &back);
        free(buf);
        snprintf(out, OUT_LEN, "ok shape=%s format=%u planes_blob_inline=%s", g.shape, f,
                 rc == EF_OK ? "ok" : ef_status_name(rc));
        if (rc == EF_OK) ef_tensor_free(back);
        ef_tensor_free(t);
        ef_tensor_free(luma);
        ef_tensor_free(chroma);
    } else if (strcmp(op, "hostile_blob") == 0) {
        size_t word = (size_t)atoi(a[0]), len = 0;
        uint32_t value = (uint32_t)strtoul(a[1], NULL, 10);
        uint8_t *buf;
        int rc;
        CK(new_tensor("u8", "4,4", "mem", RW, &t));
        ef_tensor_export_blob(t, EF_BLOB_INLINE, NULL, 0, &len);
        buf = malloc(len);
        CK(ef_tensor_export_blob(t, EF_BLOB_INLINE, buf, len, &len));
        ef_tensor_free(t);
        for (int i = 0; i < 4; i++) buf[word * 4 + (size_t)i] = (uint8_t)(value >> (8 * i));
        rc = ef_tensor_import_blob(buf, len, &back);
        free(buf);
        if (rc != EF_OK) {
            err(out, rc);
            return;
        }
        ef_tensor_free(back);
        snprintf(out, OUT_LEN, "ok");
    } else if (strcmp(op, "desc") == 0) {
        ef_tensor_desc d;
        ef_map m;
        int access;
        CK(new_tensor("u8", "8,8", a[0], RW, &t));
        CK(ef_tensor_export_descriptor(t, &d));
        CK(ef_tensor_import_descriptor(&d, EF_ACCESS_READ, &back));
        geometry(back, &g);
        access = ef_tensor_map(back, RW, &m) == EF_ACCESS_DENIED ? 1 : 3;
        snprintf(out, OUT_LEN, "ok shape=%s same_identity=%d access=%d", g.shape, identity(back) == identity(t),
                 access);
        ef_tensor_free(back);
        ef_tensor_free(t);
    } else if (strcmp(op, "desc_stale") == 0) {
        ef_tensor_desc d;
        CK(new_tensor("u8", "8,8", "shm", RW, &t));
        CK(ef_tensor_export_descriptor(t, &d));
        ef_tensor_free(t);
        CK(ef_tensor_import_descriptor(&d, EF_ACCESS_READ, &back));
        snprintf(out, OUT_LEN, "ok");
    } else {
        fprintf(stderr, "unknown op %s\n", op);
        exit(2);
    }
}

int main(int argc, char **argv) {
    FILE *f;
    char line[512];
    int failures = 0, cases = 0;
    if (argc != 2 || !(f = fopen(argv[1], "r"))) {
        fprintf(stderr, "usage: %s CASES_FILE\n", argv[0]);
        return 2;
    }
    while (fgets(line, sizeof line, f)) {
        char *eq, *words[16], want[256] = "", got[OUT_LEN] = "", *tok;
        int n = 0;
        if (line[0] == '#' || line[0] == '\n') continue;
        eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        for (tok = strtok(eq + 1, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
            if (want[0]) strncat(want, " ", sizeof want - strlen(want) - 1);
            strncat(want, tok, sizeof want - strlen(want) - 1);
        }
        for (tok = strtok(line, " \t\n"); tok && n < 16; tok = strtok(NULL, " \t\n")) words[n++] = tok;
        if (n < 2) continue;
        run(words[1], words + 2, got);
        printf("%s: %s\n", words[0], got);
        cases++;
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "%s: got `%s`, want `%s`\n", words[0], got, want);
            failures++;
        }
    }
    fclose(f);
    fprintf(stderr, "c conformance: %d cases, %d failed\n", cases, failures);
    return failures == 0 && cases >= 20 ? 0 : 1;
}
