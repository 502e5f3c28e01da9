// A probe, not the product's decoder: Kineto JSON events -> numpy columns with no Python object per event, to
// measure what a native decoder would cost (tools/native_scan_probe.py compiles it, runs it on a trace and checks
// its columns against tracetriage.analyzers.loading.decode's). Reads ph, cat, name, pid, tid, ts, dur and
// args.{External id, external id, correlation, device, stream, bytes, Sequence number, Input Dims, Input type,
// Concrete Inputs}; anything it does not handle (an escaped name, a number with an exponent or beyond 2^53, a
// string tid on a complete event) returns -1, where the product would hand the file to today's decoder.
// Numbers: Clinger's fast path (an integer mantissa below 2^53 divided by an exact power of ten is correctly
// rounded), so a ts reads as the same double msgspec makes.
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

typedef struct { const char *p, *e; int bad; } S;

static inline void ws(S *s) { while (s->p < s->e && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++; }

// string at s->p (on the quote): returns start, len; sets esc if a backslash was seen
static inline const char *str(S *s, int64_t *len, int *esc) {
    const char *st = ++s->p; *esc = 0; *len = 0;
    for (;;) {
        const char *q = memchr(s->p, '"', s->e - s->p);
        if (!q) { s->bad = 1; return st; }
        // an odd number of backslashes before the quote escapes it
        const char *b = q; int k = 0; while (b > st && b[-1] == '\\') { b--; k++; }
        if (k % 2 == 0) { *len = q - st; *esc = memchr(st, '\\', (size_t)*len) != NULL; s->p = q + 1; return st; }
        s->p = q + 1;
    }
}

static void skip(S *s) {
    ws(s);
    if (s->p >= s->e) { s->bad = 1; return; }
    char c = *s->p;
    if (c == '"') { int64_t l; int e; str(s, &l, &e); return; }
    if (c == '{' || c == '[') {
        int depth = 0;
        while (s->p < s->e) {
            char d = *s->p;
            if (d == '"') { int64_t l; int e; str(s, &l, &e); continue; }
            if (d == '{' || d == '[') depth++;
            else if (d == '}' || d == ']') { depth--; if (depth == 0) { s->p++; return; } }
            s->p++;
        }
        s->bad = 1; return;
    }
    while (s->p < s->e && *s->p != ',' && *s->p != '}' && *s->p != ']' && *s->p != ' ' && *s->p != '\n') s->p++;
}

static const double P10[] = {1e0,1e1,1e2,1e3,1e4,1e5,1e6,1e7,1e8,1e9,1e10,1e11,1e12,1e13,1e14,1e15,1e16,1e17,1e18,1e19,1e20,1e21,1e22};

// number: int or decimal; fast path (Clinger): mantissa < 2^53, exponent <= 22
static inline int num(S *s, double *d, int64_t *i, int *is_int) {
    ws(s);
    const char *p = s->p; int neg = 0;
    if (p < s->e && *p == '-') { neg = 1; p++; }
    uint64_t m = 0; int digits = 0, frac = 0;
    while (p < s->e && *p >= '0' && *p <= '9') { m = m * 10 + (*p - '0'); p++; digits++; }
    *is_int = 1;
    if (p < s->e && *p == '.') {
        *is_int = 0; p++;
        while (p < s->e && *p >= '0' && *p <= '9') { m = m * 10 + (*p - '0'); p++; digits++; frac++; }
    }
    if (p < s->e && (*p == 'e' || *p == 'E')) return 0;   // (not handled: the caller falls back)
    if (digits == 0 || digits > 18 || (m >> 53) || frac > 22) return 0;
    s->p = p;
    if (*is_int) { *i = neg ? -(int64_t)m : (int64_t)m; *d = (double)*i; }
    else { double v = (double)m / P10[frac]; *d = neg ? -v : v; }
    return 1;
}

static inline int key_is(const char *k, int64_t l, const char *w) { return (int64_t)strlen(w) == l && memcmp(k, w, l) == 0; }

// A span's hash, 8 bytes a step (shapes' texts are a few hundred bytes: a byte a step was a third of the scan)
static inline uint64_t mix(uint64_t x, const char *p, int64_t l) {
    int64_t i = 0;
    for (; i + 8 <= l; i += 8) { uint64_t w; memcpy(&w, p + i, 8); x = (x ^ w) * 0x9E3779B97F4A7C15ULL; x ^= x >> 29; }
    uint64_t w = 0;
    memcpy(&w, p + i, (size_t)(l - i));
    x = (x ^ w ^ ((uint64_t)l << 56)) * 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 32);
}

// Interned keys of one to three spans of the text: id by first appearance (open addressing; cap a power of two)
typedef struct { int64_t *off, *len; int32_t *slot; int64_t n, cap; const char *base; int parts; } Tab;

static int32_t intern(Tab *t, const char **p, const int64_t *l) {
    uint64_t x = 1469598103934665603ULL;
    for (int j = 0; j < t->parts; j++) x = mix(x, p[j], l[j]);
    uint64_t m = t->cap - 1, i = x & m;
    for (;;) {
        int32_t id = t->slot[i];
        if (id < 0) {
            if (t->n * 2 >= t->cap) return -1;
            t->slot[i] = (int32_t)t->n;
            for (int j = 0; j < t->parts; j++) { t->off[t->n * t->parts + j] = p[j] - t->base; t->len[t->n * t->parts + j] = l[j]; }
            return (int32_t)t->n++;
        }
        int same = 1;
        for (int j = 0; j < t->parts && same; j++)
            same = t->len[id * t->parts + j] == l[j] && memcmp(t->base + t->off[id * t->parts + j], p[j], l[j]) == 0;
        if (same) return id;
        i = (i + 1) & m;
    }
}

enum { C_PID, C_TID, C_EXT, C_EXT_OLD, C_CORR, C_DEVICE, C_STREAM, C_BYTES, C_SEQ, N_INT_COLS };

// The events of the list that starts at base[start] ('[', or '{': a part of the list, from an event on) up to its
// ']' or base[n] (a part's end, just after an event): one row per event (complete or not), is_x[k] = 1 for a
// complete event ("ph": "X"). pid[k] = INT64_MIN: a string pid (the profiler's own spans; dropped, as today).
// Returns the number of events, or -1 (not handled: see the head of this file), -2 (more events than cap).
int64_t scan(const char *base, int64_t n, int64_t start, int64_t cap, uint8_t *is_x, double *f64, int64_t *i64,
             int32_t *name_id, int32_t *cat_id, int32_t *shape_id, int64_t *tabs_off, int64_t *tabs_len,
             int32_t *tabs_slot, int64_t tab_cap, int64_t *tabs_n) {
    S s = {base + start, base + n, 0};
    Tab names = {tabs_off, tabs_len, tabs_slot, 0, tab_cap, base, 1};
    Tab cats = {tabs_off + 3 * tab_cap, tabs_len + 3 * tab_cap, tabs_slot + tab_cap, 0, tab_cap, base, 1};
    Tab shapes = {tabs_off + 6 * tab_cap, tabs_len + 6 * tab_cap, tabs_slot + 2 * tab_cap, 0, tab_cap, base, 3};
    double *ts = f64, *dur = f64 + cap;
    int64_t *col[N_INT_COLS];
    for (int c = 0; c < N_INT_COLS; c++) col[c] = i64 + c * cap;
    int64_t k = 0;
    int32_t no_shape = -1;
    ws(&s);
    if (s.p < s.e && *s.p == '[') s.p++;
    else if (s.p >= s.e || *s.p != '{') return -1;
    for (;;) {
        ws(&s);
        if (s.p >= s.e || *s.p == ']') break;     // (the end of the list, or of the part of it asked for)
        if (*s.p != '{') return -1;
        if (k >= cap) return -2;
        s.p++;
        is_x[k] = 0; ts[k] = dur[k] = __builtin_nan(""); name_id[k] = cat_id[k] = shape_id[k] = -1;
        for (int c = C_PID; c < N_INT_COLS; c++) col[c][k] = -1;
        col[C_PID][k] = col[C_TID][k] = 0;
        int tid_is_str = 0, has_name = 0, has_cat = 0;
        const char *sp[3] = {0, 0, 0}; int64_t sl[3] = {0, 0, 0};
        for (;;) {
            ws(&s);
            if (s.p >= s.e) return -1;
            if (*s.p == '}') { s.p++; break; }
            if (*s.p != '"') return -1;
            int64_t kl; int esc; const char *key = str(&s, &kl, &esc);
            ws(&s); if (s.p >= s.e || *s.p != ':') return -1; s.p++; ws(&s);
            double d; int64_t iv; int isint;
            if (key_is(key, kl, "ph")) {
                if (*s.p != '"') return -1;
                int64_t l; const char *v = str(&s, &l, &esc); is_x[k] = (l == 1 && v[0] == 'X');
            } else if (key_is(key, kl, "name") || key_is(key, kl, "cat")) {
                if (*s.p != '"') return -1;
                int64_t l; const char *v = str(&s, &l, &esc);
                if (esc) return -1;
                int32_t id = intern(key[0] == 'n' ? &names : &cats, &v, &l);
                if (id < 0) return -2;
                if (key[0] == 'n') { name_id[k] = id; has_name = 1; } else { cat_id[k] = id; has_cat = 1; }
            } else if (key_is(key, kl, "ts") || key_is(key, kl, "dur")) {
                if (!num(&s, &d, &iv, &isint)) return -1;
                (key[0] == 't' ? ts : dur)[k] = d;
            } else if (key_is(key, kl, "pid") || key_is(key, kl, "tid")) {
                int64_t *dst = key[0] == 'p' ? col[C_PID] : col[C_TID];
                if (*s.p == '"') { skip(&s); if (key[0] == 'p') dst[k] = INT64_MIN; else tid_is_str = 1; }
                else { if (!num(&s, &d, &iv, &isint) || !isint) return -1; dst[k] = iv; }
            } else if (key_is(key, kl, "args") && *s.p == '{') {
                s.p++;
                for (;;) {
                    ws(&s);
                    if (s.p >= s.e) return -1;
                    if (*s.p == '}') { s.p++; break; }
                    if (*s.p != '"') return -1;
                    int64_t al; const char *ak = str(&s, &al, &esc);
                    ws(&s); if (s.p >= s.e || *s.p != ':') return -1; s.p++; ws(&s);
                    int c = -1, j = -1;
                    if (key_is(ak, al, "External id")) c = C_EXT;
                    else if (key_is(ak, al, "external id")) c = C_EXT_OLD;
                    else if (key_is(ak, al, "correlation")) c = C_CORR;
                    else if (key_is(ak, al, "device")) c = C_DEVICE;
                    else if (key_is(ak, al, "stream")) c = C_STREAM;
                    else if (key_is(ak, al, "bytes")) c = C_BYTES;
                    else if (key_is(ak, al, "Sequence number")) c = C_SEQ;
                    else if (key_is(ak, al, "Input Dims")) j = 0;
                    else if (key_is(ak, al, "Input type")) j = 1;
                    else if (key_is(ak, al, "Concrete Inputs")) j = 2;
                    if (c >= 0) { if (!num(&s, &d, &iv, &isint) || !isint) return -1; col[c][k] = iv; }
                    else if (j >= 0) { sp[j] = s.p; skip(&s); sl[j] = s.p - sp[j]; }
                    else skip(&s);
                    if (s.bad) return -1;
                    ws(&s); if (s.p < s.e && *s.p == ',') s.p++;
                }
            } else skip(&s);
            if (s.bad) return -1;
            ws(&s); if (s.p < s.e && *s.p == ',') s.p++;
        }
        if (is_x[k] && col[C_PID][k] != INT64_MIN && (tid_is_str || !has_name || !has_cat)) return -1;
        if (sp[0] || sp[1] || sp[2]) {
            for (int j = 0; j < 3; j++) if (!sp[j]) sp[j] = base;   // (absent: an empty span)
            shape_id[k] = intern(&shapes, sp, sl);
        } else {      // no shape (every event but an op's): the empty key, interned once
            if (no_shape < 0) { sp[0] = sp[1] = sp[2] = base; no_shape = intern(&shapes, sp, sl); }
            shape_id[k] = no_shape;
        }
        if (shape_id[k] < 0) return -2;
        k++;
        ws(&s); if (s.p < s.e && *s.p == ',') s.p++;
    }
    tabs_n[0] = names.n; tabs_n[1] = cats.n; tabs_n[2] = shapes.n;
    return k;
}
