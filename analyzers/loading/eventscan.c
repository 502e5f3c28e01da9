// The native event scan: a Kineto trace's JSON text -> numpy columns of its complete events, with no Python
// object per event (tracetriage.analyzers.loading.native drives it; decode.py's msgspec decoder is the fallback).
//
// A real CPython extension module (built by setuptools from setup.py, optional: no compiler, no module), not a
// shared library loaded with ctypes: the import system finds it wherever pip put it (the editable install's
// tracetriage.analyzers -> analyzers/ mapping included, with no path to work out), and the scan runs with the GIL
// released, so the two halves of a big file are scanned in two threads.
//
// The contract: the scan accepts a text only if msgspec's strict decode (decode.py) would accept it and read the
// same columns from it. Anything else -- invalid JSON anywhere (strings with raw control characters or bad
// escapes, numbers such as 01 or 1., nesting past MAX_DEPTH), an escaped key, an event with no "ph" or two, a
// phase msgspec does not know, and on a complete event: a string tid, an integer id of more than 18 digits, a
// number past a double's normal range, a value of the wrong type, a key twice, an "args.rank" (a merged
// multi-rank file) -- returns NOT_HANDLED, and the caller hands the file to msgspec, which decides (a report, the
// lenient decoder, or one error line). Numbers: Clinger's fast path (a mantissa below 2^53 divided by an exact
// power of ten is correctly rounded), else strtod (correctly rounded): a ts reads as the same double msgspec makes.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>      // (x86-64 always has SSE2: a string 16 bytes a step)
#define SCAN_SSE2 1
#endif

enum { OK = 0, NOT_HANDLED = -1, ROWS_FULL = -2, TABLE_FULL = -3 };
#define MAX_DEPTH 64        // deeper values go to msgspec (which raises RecursionError past its own limit)

typedef struct { const char *p, *e; } S;

static inline void ws(S *s) {
    // (one test on a byte above ' ', as almost every byte after a token of a compact trace is)
    while (s->p < s->e && (unsigned char)*s->p <= ' '
           && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}
static inline int isdig(char c) { return c >= '0' && c <= '9'; }
static inline int ishex(char c) { return isdig(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
// nonzero iff a byte of v is zero / below n (n <= 128): 8 bytes of a string a step (shapes' texts run to
// hundreds of bytes)
static inline uint64_t has_zero(uint64_t v) { return (v - ONES) & ~v & HIGHS; }
static inline uint64_t has_below(uint64_t v, uint64_t n) { return (v - ONES * n) & ~v & HIGHS; }

// The string at s->p (on its opening quote), checked as msgspec checks one: no raw control character, only
// JSON's escapes, and no \u escape of a surrogate (msgspec checks their pairing: those go to it). Sets *start,
// *len (the text between the quotes) and *esc (it has an escape). 0: not a string this scan accepts.
static int str_on(S *s, const char *p, const char **start, int64_t *len, int *esc);

static inline int str(S *s, const char **start, int64_t *len, int *esc) {
    const char *p = s->p + 1;
    *start = p;
    *esc = 0;
#ifdef SCAN_SSE2
    // a key or short name: its closing quote in the first 16 bytes, nothing before it to check further (inline)
    if (p + 16 <= s->e) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        const __m128i ctl = _mm_set1_epi8(0x1f);
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                                _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                                   _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl)));
        if (mask) {
            int at = __builtin_ctz((unsigned)mask);
            if (p[at] == '"') { *len = at; s->p = p + at + 1; return 1; }
            return str_on(s, p + at, start, len, esc);
        }
        return str_on(s, p + 16, start, len, esc);
    }
#endif
    return str_on(s, p, start, len, esc);
}

// str() from p on (the bytes before p are plain text)
static int str_on(S *s, const char *p, const char **start, int64_t *len, int *esc) {
    const char *e = s->e;
    for (;;) {
#ifdef SCAN_SSE2
        // 16 bytes a step: the first '"', '\\' or byte below 0x20 (x <= 0x1f: max(x, 0x1f) == 0x1f, unsigned)
        const __m128i quote = _mm_set1_epi8('"'), back = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
        while (p + 16 <= e) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, back)),
                                       _mm_cmpeq_epi8(_mm_max_epu8(v, ctl), ctl));
            int mask = _mm_movemask_epi8(hit);
            if (mask) { p += __builtin_ctz((unsigned)mask); goto special; }
            p += 16;
        }
#endif
        while (p + 8 <= e) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (has_zero(w ^ (ONES * '"')) | has_zero(w ^ (ONES * '\\')) | has_below(w, 0x20)) break;
            p += 8;
        }
        while (p < e && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
#ifdef SCAN_SSE2
    special:
#endif
        if (p >= e || (unsigned char)*p < 0x20) return 0;
        if (*p == '"') { *len = p - *start; s->p = p + 1; return 1; }
        *esc = 1;                                   // a backslash
        if (p + 1 >= e) return 0;
        char x = p[1];
        if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
            p += 2;
            continue;
        }
        if (x != 'u' || p + 6 > e || !ishex(p[2]) || !ishex(p[3]) || !ishex(p[4]) || !ishex(p[5])) return 0;
        if ((p[2] == 'd' || p[2] == 'D') && !isdig(p[3])) return 0;       // \uD800-\uDFFF: a surrogate
        if ((p[2] == 'd' || p[2] == 'D') && (p[3] == '8' || p[3] == '9')) return 0;
        p += 6;
    }
}

static const double P10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

enum { INT = 0, DECIMAL = 1, OTHER_NUMBER = 2 };

// A JSON number at s->p, its grammar checked in full (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?). *kind:
// INT (a whole number of at most 18 digits: *iv, and *d), DECIMAL (any other: *d), or OTHER_NUMBER (valid, but
// not read here: past a double's normal range, or longer than 71 characters). 0: not a number.
static int number(S *s, double *d, int64_t *iv, int *kind) {
    const char *p = s->p, *e = s->e;
    int neg = 0, digits = 0, frac = 0, exact = 1;
    uint64_t m = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e || !isdig(*p)) return 0;
    if (*p == '0') {
        p++;
        digits = 1;
        if (p < e && isdig(*p)) return 0;        // a leading zero
    } else {
        while (p < e && isdig(*p)) { if (digits < 19) m = m * 10 + (uint64_t)(*p - '0'); digits++; p++; }
    }
    int whole = 1;
    if (p < e && *p == '.') {
        whole = 0;
        p++;
        if (p >= e || !isdig(*p)) return 0;
        while (p < e && isdig(*p)) { if (digits < 19) m = m * 10 + (uint64_t)(*p - '0'); digits++; frac++; p++; }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || !isdig(*p)) return 0;
        while (p < e && isdig(*p)) p++;
        exact = 0;
    }
    const char *from = s->p;
    s->p = p;
    if (whole && exact && digits <= 18) {
        *iv = neg ? -(int64_t)m : (int64_t)m;
        *kind = INT;
        if (!(m >> 53)) { *d = neg ? -(double)m : (double)m; return 1; }
    } else *kind = DECIMAL;
    if (exact && digits <= 18 && !(m >> 53) && frac <= 22) {
        double v = (double)m / P10[frac];
        *d = neg ? -v : v;
        return 1;
    }
    // Past the fast path (17 digits, as a ts of a clock up 104 days has; an exponent): strtod, correctly rounded
    // as msgspec's parse is (glibc's, and the C runtimes' of macOS and Windows); not under a locale whose
    // decimal point is no '.': Python leaves LC_NUMERIC at "C". A number that overflows, underflows or is
    // longer than the buffer goes to msgspec.
    char buf[72];
    if (p - from >= (ptrdiff_t)sizeof buf) { *kind = OTHER_NUMBER; return 1; }
    memcpy(buf, from, (size_t)(p - from));
    buf[p - from] = 0;
    char *stop;
    double v = strtod(buf, &stop);
    if (stop != buf + (p - from) || !(v > -1.7e308 && v < 1.7e308) || (v != 0 && v > -1e-300 && v < 1e-300)) {
        *kind = OTHER_NUMBER;
        return 1;
    }
    *d = v;
    if (whole && !exact) *kind = DECIMAL;
    return 1;
}

// A JSON number at s->p passed over, its grammar checked as number() checks it (0 exactly where number() gives 0),
// without reading its value: the numbers of the args the columns do not take (Input Dims, Input Strides...)
static int skip_number(S *s) {
    const char *p = s->p, *e = s->e;
    if (p < e && *p == '-') p++;
    if (p >= e || !isdig(*p)) return 0;
    if (*p == '0') {
        p++;
        if (p < e && isdig(*p)) return 0;        // a leading zero
    } else {
        while (p < e && isdig(*p)) p++;
    }
    if (p < e && *p == '.') {
        p++;
        if (p >= e || !isdig(*p)) return 0;
        while (p < e && isdig(*p)) p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || !isdig(*p)) return 0;
        while (p < e && isdig(*p)) p++;
    }
    s->p = p;
    return 1;
}

static int literal(S *s, const char *word, size_t n) {
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, word, n) != 0) return 0;
    s->p += n;
    return 1;
}

// A key (a string, then ':') at s->p; *esc: it has an escape
static int key(S *s, const char **k, int64_t *kl, int *esc) {
    ws(s);
    if (s->p >= s->e || *s->p != '"' || !str(s, k, kl, esc)) return 0;
    ws(s);
    if (s->p >= s->e || *s->p != ':') return 0;
    s->p++;
    ws(s);
    return 1;
}

// One JSON value at s->p, checked and passed over (iteratively, to MAX_DEPTH). 0: not valid JSON (or too deep).
static int skip(S *s) {
    char open[MAX_DEPTH];
    int depth = 0;
    for (;;) {
        ws(s);                                  // a value
        if (s->p >= s->e) return 0;
        char c = *s->p;
        const char *k; int64_t kl; int esc;
        if (c == '{' || c == '[') {
            if (depth >= MAX_DEPTH) return 0;
            open[depth++] = c;
            s->p++;
            ws(s);
            if (s->p < s->e && *s->p == (c == '{' ? '}' : ']')) { s->p++; depth--; }
            else { if (c == '{' && !key(s, &k, &kl, &esc)) return 0; continue; }
        } else if (c == '"') { if (!str(s, &k, &kl, &esc)) return 0; }
        else if (c == 't') { if (!literal(s, "true", 4)) return 0; }
        else if (c == 'f') { if (!literal(s, "false", 5)) return 0; }
        else if (c == 'n') { if (!literal(s, "null", 4)) return 0; }
        else if (!skip_number(s)) return 0;
        for (;;) {                              // after a value: the next one, or the end of its containers
            if (depth == 0) return 1;
            ws(s);
            if (s->p >= s->e) return 0;
            char close = open[depth - 1] == '{' ? '}' : ']';
            if (*s->p == ',') {
                s->p++;
                if (open[depth - 1] == '{' && !key(s, &k, &kl, &esc)) return 0;
                break;
            }
            if (*s->p != close) return 0;
            s->p++;
            depth--;
        }
    }
}

// After a member of an object: ',' (then *more = 1) or its '}' (*more = 0). 0: neither.
static int next_member(S *s, int *more) {
    ws(s);
    if (s->p >= s->e) return 0;
    if (*s->p == ',') { s->p++; *more = 1; return 1; }
    if (*s->p == '}') { s->p++; *more = 0; return 1; }
    return 0;
}

static inline int key_is(const char *k, int64_t l, const char *w, int64_t wl) { return l == wl && memcmp(k, w, (size_t)wl) == 0; }
#define KEY_IS(k, l, lit) key_is(k, l, lit, (int64_t)sizeof(lit) - 1)

// A span's hash, 8 bytes a step
static inline uint64_t mix(uint64_t x, const char *p, int64_t l) {
    int64_t i = 0;
    for (; i + 8 <= l; i += 8) { uint64_t w; memcpy(&w, p + i, 8); x = (x ^ w) * 0x9E3779B97F4A7C15ULL; x ^= x >> 29; }
    // the last 0-7 bytes without a memcpy of a variable length (a call, and a load the partial stores stall): two
    // 4-byte loads that may overlap, or three bytes (a hash's bits, not a key's: ids go by first appearance)
    uint64_t w = 0, r = (uint64_t)(l - i);
    if (r >= 4) {
        uint32_t a, b;
        memcpy(&a, p + i, 4);
        memcpy(&b, p + l - 4, 4);
        w = a | ((uint64_t)b << 32);
    } else if (r) {
        w = (uint64_t)(unsigned char)p[i] | ((uint64_t)(unsigned char)p[i + r / 2] << 8)
            | ((uint64_t)(unsigned char)p[l - 1] << 16);
    }
    x = (x ^ w ^ ((uint64_t)l << 56)) * 0x9E3779B97F4A7C15ULL;
    return x ^ (x >> 32);
}

// Interned keys of one to three spans of the text, ids by first appearance (open addressing; cap a power of two,
// half of it usable): off/len hold each key's spans, slot the id in each hash slot (-1: free)
typedef struct { int64_t *off, *len; int32_t *slot; int64_t n, cap; const char *base; int parts; } Tab;

static int32_t intern(Tab *t, const char **p, const int64_t *l) {
    uint64_t x = 1469598103934665603ULL;
    for (int j = 0; j < t->parts; j++) x = mix(x, p[j], l[j]);
    uint64_t m = (uint64_t)t->cap - 1, i = x & m;
    for (;;) {
        int32_t id = t->slot[i];
        if (id < 0) {
            if (t->n * 2 >= t->cap) return -1;
            t->slot[i] = (int32_t)t->n;
            for (int j = 0; j < t->parts; j++) {
                t->off[t->n * t->parts + j] = p[j] - t->base;
                t->len[t->n * t->parts + j] = l[j];
            }
            return (int32_t)t->n++;
        }
        int same = 1;
        for (int j = 0; j < t->parts && same; j++)
            same = t->len[id * t->parts + j] == l[j] && memcmp(t->base + t->off[id * t->parts + j], p[j], (size_t)l[j]) == 0;
        if (same) return id;
        i = (i + 1) & m;
    }
}

// The integer columns, in native.py's INT_COLUMNS order; the last two are args.dtype's span (a collective's)
enum { C_PID, C_TID, C_EXT, C_EXT_OLD, C_CORR, C_DEVICE, C_STREAM, C_BYTES, C_SEQ, C_GRAPH_NODE, C_MSG_IN,
       C_MSG_OUT, C_GROUP, C_PYID, C_DTYPE_OFF, C_DTYPE_LEN, N_INT_COLS };
// the raw spans of args: Input Dims, Input type, Concrete Inputs (an op's shape), dtype
enum { R_DIMS, R_TYPES, R_CONCRETE, R_DTYPE, N_RAW };

static int is_phase(char c) { return c && strchr("XBEiICbneSTpFstfPONDMVvRc()", c) != NULL; }

static int has_high_byte(const char *p, int64_t l) {
    for (int64_t i = 0; i < l; i++) if ((unsigned char)p[i] >= 0x80) return 1;
    return 0;
}

// The args object at s->p ('{') of one event: the columns' values into v (a value of the wrong type sets *bad,
// which matters if the event is a complete one), the raw spans into rp/rl
static int args(S *s, int64_t *v, const char **rp, int64_t *rl, int *bad) {
    s->p++;
    ws(s);
    if (s->p < s->e && *s->p == '}') { s->p++; return 1; }
    for (int more = 1; more;) {
        const char *k; int64_t kl; int esc;
        if (!key(s, &k, &kl, &esc) || esc) return 0;
        int c = -1, r = -1;
        switch (kl) {
            case 4: if (KEY_IS(k, kl, "rank")) *bad = 1; break;     // a merged multi-rank file: msgspec's
            case 5: if (KEY_IS(k, kl, "bytes")) c = C_BYTES; else if (KEY_IS(k, kl, "dtype")) r = R_DTYPE; break;
            case 6: if (KEY_IS(k, kl, "device")) c = C_DEVICE; else if (KEY_IS(k, kl, "stream")) c = C_STREAM; break;
            case 9: if (KEY_IS(k, kl, "Python id")) c = C_PYID; break;
            case 10:
                if (KEY_IS(k, kl, "Input Dims")) r = R_DIMS;
                else if (KEY_IS(k, kl, "Input type")) r = R_TYPES;
                else if (KEY_IS(k, kl, "Group size")) c = C_GROUP;
                break;
            case 11:
                if (KEY_IS(k, kl, "External id")) c = C_EXT;
                else if (KEY_IS(k, kl, "external id")) c = C_EXT_OLD;
                else if (KEY_IS(k, kl, "correlation")) c = C_CORR;
                break;
            case 13:
                if (KEY_IS(k, kl, "graph node id")) c = C_GRAPH_NODE;
                else if (KEY_IS(k, kl, "In msg nelems")) c = C_MSG_IN;
                break;
            case 14: if (KEY_IS(k, kl, "Out msg nelems")) c = C_MSG_OUT; break;
            case 15:
                if (KEY_IS(k, kl, "Sequence number")) c = C_SEQ;
                else if (KEY_IS(k, kl, "Concrete Inputs")) r = R_CONCRETE;
                break;
        }
        if (c >= 0 && s->p < s->e && (*s->p == '-' || isdig(*s->p))) {
            double d; int kind;
            if (!number(s, &d, &v[c], &kind)) return 0;
            if (kind != INT) *bad = 1;
        } else {
            if (c >= 0) *bad = 1;                   // (a string, null...: msgspec's strict decode refuses it)
            const char *at = s->p;
            if (!skip(s)) return 0;
            if (r >= 0) { rp[r] = at; rl[r] = s->p - at; }
        }
        if (!next_member(s, &more)) return 0;
    }
    return 1;
}

typedef struct {
    const char *base;
    int64_t cap;
    double *ts, *dur;
    int64_t *col[N_INT_COLS];
    int32_t *name, *cat, *shape;
    Tab names, cats, shapes;
    int32_t no_shape;
} Out;

// One event at s->p ('{'); a complete event with a number pid becomes row out[*rows]
static int event(S *s, Out *o, int64_t *rows) {
    const char *base = o->base;
    s->p++;
    int64_t v[N_INT_COLS];
    for (int c = 0; c < N_INT_COLS; c++) v[c] = -1;
    v[C_PID] = v[C_TID] = 0;
    double ts = __builtin_nan(""), dur = __builtin_nan("");
    const char *rp[N_RAW] = {base, base, base, base}; int64_t rl[N_RAW] = {0, 0, 0, 0};
    const char *name = base, *cat = base; int64_t name_l = 0, cat_l = 0;
    int ph = 0, bad = 0, pid_is_str = 0, tid_is_str = 0, high = 0, seen = 0;
    ws(s);
    if (s->p < s->e && *s->p == '}') return 0;                 // {}: no "ph"
    for (int more = 1; more;) {
        const char *k; int64_t kl; int esc, bit = 0;
        if (!key(s, &k, &kl, &esc) || esc) return 0;
        if (s->p >= s->e) return 0;
        if (KEY_IS(k, kl, "ph")) {
            const char *p; int64_t l;
            if (ph || *s->p != '"' || !str(s, &p, &l, &esc) || esc || l != 1 || !is_phase(p[0])) return 0;
            ph = p[0];
        } else if (KEY_IS(k, kl, "name") || KEY_IS(k, kl, "cat")) {
            bit = k[0] == 'n' ? 1 : 2;
            const char *p; int64_t l;
            if (*s->p == '"') {
                if (!str(s, &p, &l, &esc)) return 0;
                if (k[0] == 'n') { name = p; name_l = l; } else { cat = p; cat_l = l; }
            } else { bad = 1; if (!skip(s)) return 0; }
        } else if (KEY_IS(k, kl, "pid") || KEY_IS(k, kl, "tid")) {
            bit = k[0] == 'p' ? 4 : 8;
            double d; int kind;
            if (*s->p == '"') {
                const char *p; int64_t l;
                if (!str(s, &p, &l, &esc)) return 0;
                if (k[0] == 'p') pid_is_str = 1; else tid_is_str = 1;
                high |= has_high_byte(p, l);
            } else if (*s->p == '-' || isdig(*s->p)) {
                if (!number(s, &d, &v[k[0] == 'p' ? C_PID : C_TID], &kind)) return 0;
                if (kind != INT) bad = 1;
                if (k[0] == 'p') pid_is_str = 0; else tid_is_str = 0;
            } else { bad = 1; if (!skip(s)) return 0; }
        } else if (KEY_IS(k, kl, "ts") || KEY_IS(k, kl, "dur")) {
            bit = k[0] == 't' ? 16 : 32;
            double d; int64_t iv; int kind;
            if (*s->p == '-' || isdig(*s->p)) {
                if (!number(s, &d, &iv, &kind)) return 0;
                if (kind == OTHER_NUMBER) bad = 1;
                if (k[0] == 't') ts = d; else dur = d;
            } else { bad = 1; if (!skip(s)) return 0; }
        } else if (KEY_IS(k, kl, "args")) {
            bit = 64;
            if (*s->p == '{') { if (!args(s, v, rp, rl, &bad)) return 0; }
            else { bad = 1; if (!skip(s)) return 0; }
        } else if (!skip(s)) return 0;
        if (seen & bit) bad = 1;           // a key twice (msgspec keeps the last: not worth following here)
        seen |= bit;
        if (!next_member(s, &more)) return 0;
    }
    if (!ph) return 0;
    if (ph != 'X') return 1;
    if (bad) return 0;
    if (pid_is_str)        // the profiler's own spans: dropped, as by decode.py (but msgspec reads their texts)
        return !(high || has_high_byte(name, name_l) || has_high_byte(cat, cat_l));
    if (tid_is_str) return 0;       // ("stream 7" of an old trace: decode.py's _int_of reads it)
    int64_t k = *rows;
    if (k >= o->cap) return ROWS_FULL;
    o->ts[k] = ts;
    o->dur[k] = dur;
    for (int c = 0; c < N_INT_COLS; c++) o->col[c][k] = v[c];
    o->col[C_DTYPE_OFF][k] = rp[R_DTYPE] - base;
    o->col[C_DTYPE_LEN][k] = rl[R_DTYPE];
    int32_t n = intern(&o->names, &name, &name_l), c = intern(&o->cats, &cat, &cat_l);
    int32_t sh = o->no_shape;
    if (rl[R_DIMS] || rl[R_TYPES] || rl[R_CONCRETE] || sh < 0) sh = intern(&o->shapes, rp, rl);
    if (!rl[R_DIMS] && !rl[R_TYPES] && !rl[R_CONCRETE]) o->no_shape = sh;
    if (n < 0 || c < 0 || sh < 0) return TABLE_FULL;
    o->name[k] = n;
    o->cat[k] = c;
    o->shape[k] = sh;
    *rows = k + 1;
    return 1;
}

// The events from base[start] ('[': the list's start, or '{': an event, the first of a later part) up to the
// list's ']' (last part) or to base[end] (a part that ends just after an event's ',').
// info: [events, rows, position after the list's ']' (-1: the part ended at `end`), names, categories, shapes]; the
// scan goes on from the counts info holds (zeros: a fresh part; a streamed part's earlier pieces: their counts, with
// the same columns and tables), so a part may be scanned a piece at a time as its text arrives
static int scan(const char *base, int64_t start, int64_t end, int last, Out *o, int64_t *info) {
    S s = {base + start, base + end};
    int64_t events = info[0], rows = info[1];
    info[2] = -1;
    if (s.p < s.e && *s.p == '[') {
        s.p++;
        ws(&s);
        if (s.p < s.e && *s.p == ']') { s.p++; info[2] = s.p - base; goto done; }
    }
    for (;;) {
        ws(&s);
        if (s.p >= s.e || *s.p != '{') return NOT_HANDLED;
        int r = event(&s, o, &rows);
        if (r <= 0) return r == 0 ? NOT_HANDLED : r;
        events++;
        ws(&s);
        if (s.p >= s.e) return NOT_HANDLED;
        if (*s.p == ']') { s.p++; info[2] = s.p - base; break; }
        if (*s.p != ',') return NOT_HANDLED;
        s.p++;
        ws(&s);
        if (s.p == s.e && !last) break;              // a part's end: just after an event and its ','
    }
    if (last != (info[2] >= 0)) return NOT_HANDLED;
done:
    info[0] = events;
    info[1] = rows;
    info[3] = o->names.n;
    info[4] = o->cats.n;
    info[5] = o->shapes.n;
    return OK;
}

// The top-level traceEvents list's '[' (or a bare list's): its offset, -1 if none this scan can find
static int64_t find_events(const char *base, int64_t n) {
    S s = {base, base + n};
    ws(&s);
    if (s.p >= s.e) return -1;
    if (*s.p == '[') return s.p - base;
    if (*s.p != '{') return -1;
    s.p++;
    for (int more = 1; more;) {
        const char *k; int64_t kl; int esc;
        if (!key(&s, &k, &kl, &esc) || esc) return -1;
        if (KEY_IS(k, kl, "traceEvents")) return s.p < s.e && *s.p == '[' ? s.p - base : -1;
        if (!skip(&s) || !next_member(&s, &more)) return -1;
    }
    return -1;
}

// --- a text scanned as it is read --------------------------------------------------------------------------
//
// The read (another thread, Python's) decompresses into the text buffer and publishes how much it wrote in
// progress[P_FILLED] (advance(): a release store, after the text's bytes); scan_stream reads each piece of whole
// events published so far, waiting between pieces without the GIL. Each wait in Python (a condition, a lock, a
// regular expression for the cut) needed the GIL back, which the main thread, importing modules, gives up only once
// asked and the switch interval is over: a 300 MB text's 150 pieces spent more time waiting than scanning.

// progress's int64 slots: P_FRONT is where the scan's claimed text ends (-1: no list found yet; -2 - m: the read's
// thread took the text from m on, the tail, to scan it itself), P_STEP the most text one step of the scan claims,
// P_TAIL where the tail begins
enum { P_FILLED, P_STATE, P_START, P_PIECE, P_WINDOW, P_FRONT, P_STEP, P_TAIL, N_PROGRESS };
enum { READING = 0, ENDED = 1, STOPPED = -1, NO_LIST = -4, NO_TAIL = -5 };

#ifdef _MSC_VER       // (x86-64: stores are seen in order; the barrier keeps the compiler from moving them)
static int64_t load_acquire(const int64_t *p) { int64_t v = *(volatile const int64_t *)p; _ReadWriteBarrier(); return v; }
static void store_release(int64_t *p, int64_t v) { _ReadWriteBarrier(); *(volatile int64_t *)p = v; }
static int swap_if(int64_t *p, int64_t *expected, int64_t v) {
    int64_t was = _InterlockedCompareExchange64((volatile __int64 *)p, v, *expected);
    if (was == *expected) return 1;
    *expected = was;
    return 0;
}
#else
static int64_t load_acquire(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store_release(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
// *p = v if *p is *expected (1); else *expected = *p (0): one thread of two wins a claim on the same text
static int swap_if(int64_t *p, int64_t *expected, int64_t v) {
    return __atomic_compare_exchange_n(p, expected, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#endif

static void nap(void) {
#ifdef _WIN32
    Sleep(0);
#else
    struct timespec t = {0, 100000};         // 0.1 ms: the gunzip writes a 2 MB piece in ~2 ms
    nanosleep(&t, NULL);
#endif
}

// The '{' of the first event boundary ('}' ws ',' ws '{' ws '"ph"' ws ':') in base[lo:hi), or -1
static int64_t boundary(const char *base, int64_t lo, int64_t hi) {
    for (const char *p = memchr(base + lo, '}', (size_t)(hi - lo)); p; p = memchr(p + 1, '}', (size_t)(base + hi - p - 1))) {
        S s = {p + 1, base + hi};
        ws(&s);
        if (s.p >= s.e || *s.p != ',') continue;
        s.p++;
        ws(&s);
        if (s.p >= s.e || *s.p != '{') continue;
        const char *brace = s.p++;
        ws(&s);
        if (!literal(&s, "\"ph\"", 4)) continue;
        ws(&s);
        if (s.p < s.e && *s.p == ':') return brace - base;
    }
    return -1;
}

// Each step claims its text (P_FRONT: at -> hi) before it scans it, at most P_STEP bytes, so that a scan behind the
// gunzip leaves text unclaimed: once the gunzip ends, the read's thread may take the second half of what is left
// (scan_tail) and the two halves are scanned on the two cores. A step that finds the tail taken scans up to it.
static int scan_as_read(const char *base, int64_t *progress, Out *o, int64_t *info) {
    int64_t piece = progress[P_PIECE], window = progress[P_WINDOW], step = progress[P_STEP], need = piece, at = -1;
    for (;;) {
        int64_t state, n;
        for (;;) {                           // the text written so far, once it reaches `need` or is all written
            state = load_acquire(&progress[P_STATE]);
            n = load_acquire(&progress[P_FILLED]);
            if (state != READING || n >= need) break;
            nap();
        }
        if (state == STOPPED) return STOPPED;
        int ended = state == ENDED;
        if (ended) n = load_acquire(&progress[P_FILLED]);     // (all of it: written before the end was published)
        need = n + piece;
        if (at < 0) {
            at = find_events(base, n);
            if (at < 0) {
                if (ended) return NO_LIST;       // (no events list it can find: the decoder's to say why)
                continue;
            }
            progress[P_START] = at;
            store_release(&progress[P_FRONT], at);
        }
        int64_t hi = n, target = n - at > step ? at + step : n;
        if (!ended || target < n) {              // a step's end: the first event boundary before `target`
            int64_t lo = target - window > at ? target - window : at;
            hi = boundary(base, lo, target);
            if (hi < 0) hi = boundary(base, lo, n);
            if (hi < 0 && !ended) continue;      // (an event longer than the window: the next wait brings more)
            if (hi < 0) hi = n;
        }
        int last = ended && hi == n;
        int64_t front = at;
        if (!swap_if(&progress[P_FRONT], &front, hi)) {      // the read's thread took the tail from -front - 2 on
            int status = scan(base, at, -front - 2, 0, o, info);
            return status == OK && info[2] >= 0 ? NOT_HANDLED : status;
        }
        int status = scan(base, at, hi, last, o, info);
        if (status != OK) {
            store_release(&progress[P_FRONT], -1);       // (no tail to take: the decoder reads the text itself)
            return status;
        }
        if (last) return OK;
        if (info[2] >= 0) return NOT_HANDLED;    // (a list that ended before the text did)
        at = hi;
        if (n - hi > step) need = hi;            // (behind the gunzip: the next step at once)
    }
}

// The second half of the text the scan has not claimed, once the whole text is written: claimed (P_FRONT -> -2 - mid,
// mid an event boundary) and scanned here into its own columns, to the list's end, while the scan goes on to mid.
// NO_TAIL where less than min_bytes is left, the scan found no list or stopped, or no boundary is found.
static int scan_tail(const char *base, int64_t *progress, Out *o, int64_t *info, int64_t min_bytes) {
    int64_t n = load_acquire(&progress[P_FILLED]), front = load_acquire(&progress[P_FRONT]), mid;
    for (;;) {
        if (front < 0 || n - front < min_bytes) return NO_TAIL;
        mid = boundary(base, front + (n - front) / 2, n);
        if (mid < 0) return NO_TAIL;
        if (swap_if(&progress[P_FRONT], &front, -mid - 2)) break;
    }
    progress[P_TAIL] = mid;
    return scan(base, mid, n, 1, o, info);
}

// --- the module ------------------------------------------------------------------------------------------

static int writable(PyObject *obj, Py_buffer *b, Py_ssize_t itemsize, Py_ssize_t min_items) {
    if (PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return 0;
    if (b->len < itemsize * min_items) {
        PyErr_SetString(PyExc_ValueError, "a column buffer is too small");
        PyBuffer_Release(b);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(scan_doc,
"scan(text, start, end, last, f64, i64, i32, tab_off, tab_len, tab_slot, info) -> status\n\n"
"The events of text[start:end] into the columns (f64: 2 x cap, i64: 16 x cap, i32: 3 x cap; row-major by\n"
"column) and the span tables (tab_off, tab_len: 9 x tab_cap int64; tab_slot: 3 x tab_cap int32, all -1), the\n"
"counts into info (6 int64: zeros, or the counts of the part's pieces scanned before into the same columns and\n"
"tables, which the scan goes on from). status: 0 done, -1 not handled (msgspec's), -2 more rows than cap, -3 a table\n"
"full.");

// The columns' and tables' buffers (objs[0..6]: f64, i64, i32, tab_off, tab_len, tab_slot, info) checked, and `o`
// over them on `base`; *got: how many of `held` to release. 0 (an error set) where they do not fit together.
static int out_over(PyObject **objs, Py_buffer *held, int *got, const char *base, Out *o) {
    Py_ssize_t sizes[7] = {8, 8, 4, 8, 8, 4, 8};
    Py_ssize_t mins[7] = {2, N_INT_COLS, 3, 9, 9, 3, 6};
    for (*got = 0; *got < 7; (*got)++)
        if (!writable(objs[*got], &held[*got], sizes[*got], mins[*got])) return 0;
    Py_buffer *f64 = &held[0], *i64 = &held[1], *i32 = &held[2], *toff = &held[3], *tlen = &held[4],
              *tslot = &held[5], *info = &held[6];
    int64_t cap = (int64_t)(f64->len / 16), tab_cap = (int64_t)(tslot->len / 12);
    const int64_t *in = (const int64_t *)info->buf;      // the counts the scan goes on from
    if (i64->len < N_INT_COLS * 8 * cap || i32->len < 12 * cap || toff->len < 72 * tab_cap || tlen->len < 72 * tab_cap
        || (tab_cap & (tab_cap - 1)) || in[0] < 0 || in[1] < 0 || in[1] > cap || in[3] < 0 || in[4] < 0 || in[5] < 0
        || in[3] * 2 > tab_cap || in[4] * 2 > tab_cap || in[5] * 2 > tab_cap) {
        PyErr_SetString(PyExc_ValueError, "buffers of unequal capacities, a table's not a power of two, or counts "
                        "to go on from that the buffers cannot hold");
        return 0;
    }
    int64_t *o64 = (int64_t *)toff->buf, *l64 = (int64_t *)tlen->buf;
    int32_t *s32 = (int32_t *)tslot->buf;
    Out out = {base, cap, (double *)f64->buf, (double *)f64->buf + cap, {0}, (int32_t *)i32->buf,
               (int32_t *)i32->buf + cap, (int32_t *)i32->buf + 2 * cap,
               {o64, l64, s32, in[3], tab_cap, base, 1},
               {o64 + 3 * tab_cap, l64 + 3 * tab_cap, s32 + tab_cap, in[4], tab_cap, base, 1},
               {o64 + 6 * tab_cap, l64 + 6 * tab_cap, s32 + 2 * tab_cap, in[5], tab_cap, base, 3}, -1};
    for (int c = 0; c < N_INT_COLS; c++) out.col[c] = (int64_t *)i64->buf + c * cap;
    *o = out;
    return 1;
}

static PyObject *py_scan(PyObject *self, PyObject *a) {
    PyObject *text_obj, *objs[7];
    Py_buffer text, held[7];
    Py_ssize_t start, end;
    int last, got = 0;
    if (!PyArg_ParseTuple(a, "OnnpOOOOOOO", &text_obj, &start, &end, &last, &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6]))
        return NULL;
    if (PyObject_GetBuffer(text_obj, &text, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL;
    Out o;
    if (out_over(objs, held, &got, (const char *)text.buf, &o)) {
        if (start < 0 || end > text.len || start > end) {
            PyErr_SetString(PyExc_ValueError, "a span outside the text");
        } else {
            int status;
            Py_BEGIN_ALLOW_THREADS
            status = scan((const char *)text.buf, start, end, last, &o, (int64_t *)held[6].buf);
            Py_END_ALLOW_THREADS
            result = PyLong_FromLong(status);
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&held[j]);
    PyBuffer_Release(&text);
    return result;
}

PyDoc_STRVAR(scan_stream_doc,
"scan_stream(text, progress, f64, i64, i32, tab_off, tab_len, tab_slot, info) -> status\n\n"
"scan() of a text as another thread writes it: progress (8 int64: written, state, the list's start, piece bytes,\n"
"cut window, the claimed front, step bytes, the tail's start) says how much of text is written (advance()) and\n"
"whether it is all written (state 1) or the read stopped (-1); each piece of whole events written is scanned once\n"
"`piece bytes` more are in, at most `step bytes` a step, cut at the first event boundary in the `cut window` bytes\n"
"before its end; where scan_tail took the tail, the scan ends there. Waits without the GIL. status: scan()'s, or -1\n"
"(the read stopped) or -4 (no events list found); progress's list start: the events list's '[' in the text.");

static PyObject *py_scan_stream(PyObject *self, PyObject *a) {
    PyObject *text_obj, *prog_obj, *objs[7];
    Py_buffer text, prog, held[7];
    int got = 0;
    if (!PyArg_ParseTuple(a, "OOOOOOOOO", &text_obj, &prog_obj, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6]))
        return NULL;
    if (PyObject_GetBuffer(text_obj, &text, PyBUF_SIMPLE) < 0) return NULL;
    if (!writable(prog_obj, &prog, 8, N_PROGRESS)) { PyBuffer_Release(&text); return NULL; }
    PyObject *result = NULL;
    Out o;
    int64_t *progress = (int64_t *)prog.buf;
    if (out_over(objs, held, &got, (const char *)text.buf, &o)) {
        if (progress[P_PIECE] < 1 || progress[P_WINDOW] < 1 || progress[P_STEP] < 1) {
            PyErr_SetString(PyExc_ValueError, "a piece, a cut window and a step of a byte or more");
        } else {
            int status;
            Py_BEGIN_ALLOW_THREADS
            status = scan_as_read((const char *)text.buf, progress, &o, (int64_t *)held[6].buf);
            Py_END_ALLOW_THREADS
            result = PyLong_FromLong(status);
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&held[j]);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&text);
    return result;
}

PyDoc_STRVAR(scan_tail_doc,
"scan_tail(text, progress, f64, i64, i32, tab_off, tab_len, tab_slot, info, min_bytes) -> status\n\n"
"Once a streamed read has written all its text (advance(..., 1)): the second half of the text scan_stream has not\n"
"claimed, from an event boundary to the list's end, claimed from it and scanned here into these columns and tables\n"
"(sized for all the unclaimed text; info zeros), while scan_stream scans up to it. status: scan()'s, or -5 (no\n"
"tail: less than min_bytes unclaimed, no list found, or the stream stopped); progress's tail slot: where it begins.");

static PyObject *py_scan_tail(PyObject *self, PyObject *a) {
    PyObject *text_obj, *prog_obj, *objs[7];
    Py_buffer text, prog, held[7];
    long long min_bytes;
    int got = 0;
    if (!PyArg_ParseTuple(a, "OOOOOOOOOL", &text_obj, &prog_obj, &objs[0], &objs[1], &objs[2], &objs[3], &objs[4],
                          &objs[5], &objs[6], &min_bytes))
        return NULL;
    if (PyObject_GetBuffer(text_obj, &text, PyBUF_SIMPLE) < 0) return NULL;
    if (!writable(prog_obj, &prog, 8, N_PROGRESS)) { PyBuffer_Release(&text); return NULL; }
    PyObject *result = NULL;
    Out o;
    int64_t *progress = (int64_t *)prog.buf;
    if (out_over(objs, held, &got, (const char *)text.buf, &o)) {
        int64_t n = load_acquire(&progress[P_FILLED]), front = load_acquire(&progress[P_FRONT]);
        if (load_acquire(&progress[P_STATE]) != ENDED || n > (int64_t)text.len) {
            PyErr_SetString(PyExc_ValueError, "a tail is taken once the whole text is written");
        } else if (front >= 0 && (n - front) / 64 + 16 > o.cap) {
            PyErr_SetString(PyExc_ValueError, "columns too small for the unclaimed text");
        } else {
            int status;
            Py_BEGIN_ALLOW_THREADS
            status = scan_tail((const char *)text.buf, progress, &o, (int64_t *)held[6].buf, (int64_t)min_bytes);
            Py_END_ALLOW_THREADS
            result = PyLong_FromLong(status);
        }
    }
    for (int j = 0; j < got; j++) PyBuffer_Release(&held[j]);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&text);
    return result;
}

PyDoc_STRVAR(advance_doc,
"advance(progress, written, state) -> None: publish to scan_stream that text[:written] is written (a release\n"
"store, after the text's own bytes), and the read's state (0 reading, 1 all written, -1 stopped).");

static PyObject *py_advance(PyObject *self, PyObject *a) {
    PyObject *prog_obj;
    long long written;
    int state;
    if (!PyArg_ParseTuple(a, "OLi", &prog_obj, &written, &state)) return NULL;
    Py_buffer prog;
    if (!writable(prog_obj, &prog, 8, N_PROGRESS)) return NULL;
    int64_t *progress = (int64_t *)prog.buf;
    store_release(&progress[P_FILLED], (int64_t)written);      // (the text's bytes before it, the state after)
    store_release(&progress[P_STATE], (int64_t)state);
    PyBuffer_Release(&prog);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(find_doc, "find_events(text) -> offset of the top-level traceEvents list's '[' (or a bare list's), -1");

static PyObject *py_find_events(PyObject *self, PyObject *arg) {
    Py_buffer text;
    if (PyObject_GetBuffer(arg, &text, PyBUF_SIMPLE) < 0) return NULL;
    int64_t at = find_events((const char *)text.buf, (int64_t)text.len);
    PyBuffer_Release(&text);
    return PyLong_FromLongLong(at);
}

PyDoc_STRVAR(text_buffer_doc,
"text_buffer(n) -> a bytearray of n bytes, not written: the text a streamed read decompresses into.\n\n"
"bytearray(n) writes n zeros, which faults every page in before the text is written over them; these pages are\n"
"faulted in by the gunzip's own writes, once.");

static PyObject *py_text_buffer(PyObject *self, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0) { PyErr_SetString(PyExc_ValueError, "a negative size"); return NULL; }
    return PyByteArray_FromStringAndSize(NULL, n);      // (its bytes not set: malloc's, a fresh mapping when large)
}

PyDoc_STRVAR(release_doc,
"release(buffer) -> None: hand the whole pages inside a writable buffer back to the system (madvise MADV_DONTNEED),\n"
"without the GIL; its bytes read as zeros after. For a text no one reads again (the load's, once decoded): its free\n"
"then unmaps pages that are no longer there, where the free of a 293 MB text took 20-24 ms holding the GIL. A no-op\n"
"where the system has no MADV_DONTNEED.");

static PyObject *py_release(PyObject *self, PyObject *arg) {
    Py_buffer buf;
    if (PyObject_GetBuffer(arg, &buf, PyBUF_WRITABLE) < 0) return NULL;
#if !defined(_WIN32) && defined(MADV_DONTNEED)
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0) {
        // (whole pages only: malloc's bookkeeping before and after the buffer stays as it was)
        uintptr_t lo = ((uintptr_t)buf.buf + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t hi = ((uintptr_t)buf.buf + (uintptr_t)buf.len) & ~((uintptr_t)page - 1);
        if (hi > lo) {
            Py_BEGIN_ALLOW_THREADS
            (void)madvise((void *)lo, (size_t)(hi - lo), MADV_DONTNEED);
            Py_END_ALLOW_THREADS
        }
    }
#endif
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"scan", py_scan, METH_VARARGS, scan_doc},
    {"text_buffer", py_text_buffer, METH_O, text_buffer_doc},
    {"scan_stream", py_scan_stream, METH_VARARGS, scan_stream_doc},
    {"scan_tail", py_scan_tail, METH_VARARGS, scan_tail_doc},
    {"advance", py_advance, METH_VARARGS, advance_doc},
    {"find_events", py_find_events, METH_O, find_doc},
    {"release", py_release, METH_O, release_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "eventscan", "The native event scan (see eventscan.c).", -1, methods};

PyMODINIT_FUNC PyInit_eventscan(void) { return PyModule_Create(&module); }
