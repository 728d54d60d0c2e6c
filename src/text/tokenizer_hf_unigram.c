/* The Unigram model of tokenizer.json (T5, ALBERT, XLNet, XLM-R, mBART) as
 * the Rust `tokenizers` library runs it (models/unigram/model.rs,
 * encode_optimized, which follows SentencePiece): each pre-token is cut
 * into the pieces of the vocabulary whose scores sum highest (Viterbi over
 * the lattice of every piece that starts at every character). A character
 * no piece covers is the unknown token at the lowest score minus 10; runs
 * of unknowns are fused into one, then spelled as <0xNN> byte tokens when
 * byte_fallback holds them all.
 *
 * The vocabulary's pieces are kept in a byte trie whose edges live in a
 * tok_merges table, (node, byte) -> child, with rank = 1 + the id of the
 * piece that ends at the child (0 for none): a common-prefix search costs
 * one lookup per byte. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_hf.h"

/* SentencePiece's kUnkPenalty. */
#define UNK_PENALTY 10.0

/* Adds piece s[0..n) with id to the trie (a later duplicate wins, as the
 * library's map keeps the last). 0, or -1 when out of memory. */
static int trie_add(tok_hf *h, const char *s, size_t n, int32_t id)
{
    int32_t node = 0, child = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t r = tok_merges_get(&h->trie, node, (uint8_t)s[i], &child);
        if (r < 0) {
            child = ++h->n_nodes;
            if (tok_merges_put(&h->trie, node, (uint8_t)s[i], child, 0, 0, NULL)) return -1;
        }
        if (i + 1 == n) return tok_merges_put(&h->trie, node, (uint8_t)s[i], child, (uint32_t)id + 1, 0, NULL);
        node = child;
    }
    return 0;
}

static posemb_status bad(const char *path, posemb_error *err, const char *msg, int i)
{
    return posemb_fail(err, POSEMB_EFORMAT, "%s: model.vocab[%d] %s", path, i, msg);
}

/* One [piece, score] entry of model.vocab, as id i. */
static posemb_status load_piece(posemb_tokenizer *t, const cJSON *e, int i, const char *path, posemb_error *err)
{
    tok_hf *h = t->hf;
    const cJSON *p = cJSON_IsArray(e) ? e->child : NULL, *sc = p ? p->next : NULL;
    if (!cJSON_IsString(p) || !cJSON_IsNumber(sc) || sc->next) return bad(path, err, "is not [\"PIECE\", SCORE]", i);
    size_t n = strlen(p->valuestring);
    if (!tok_utf8_valid(p->valuestring, n)) return bad(path, err, "is not valid UTF-8", i);
    if (!isfinite(sc->valuedouble)) return bad(path, err, "has a score that is not finite", i);
    h->scores[i] = sc->valuedouble; /* an empty piece is never matched but counts here, as the library */
    if (sc->valuedouble < h->min_score) h->min_score = sc->valuedouble;
    size_t entry;
    int r = tok_map_put(&t->vocab, p->valuestring, n, i, &entry);
    if (r == 1) { /* a duplicate: the later id encodes, as the library's map; the earlier keeps its text */
        int32_t *d = realloc(h->dup_id, (size_t)(h->n_dups + 1) * sizeof *d);
        if (d) h->dup_id = d;
        size_t *de = realloc(h->dup_entry, (size_t)(h->n_dups + 1) * sizeof *de);
        if (de) h->dup_entry = de;
        if (!d || !de) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
        h->dup_id[h->n_dups] = t->vocab.val[entry];
        h->dup_entry[h->n_dups++] = entry;
        t->vocab.val[entry] = i;
    }
    if (r < 0 || (n && trie_add(h, p->valuestring, n, i))) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    return POSEMB_OK;
}

void hf_unigram_finish(posemb_tokenizer *t)
{
    const tok_hf *h = t->hf;
    for (int k = 0; k < h->n_dups; k++) {
        size_t len;
        int32_t id = h->dup_id[k];
        if (t->id_str[id]) continue; /* an added token took it */
        t->id_str[id] = tok_map_key(&t->vocab, h->dup_entry[k], &len);
        t->id_len[id] = (uint32_t)len;
    }
}

posemb_status hf_unigram_load(posemb_tokenizer *t, const cJSON *model, const char *path, posemb_error *err)
{
    tok_hf *h = t->hf;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
    const cJSON *bf = cJSON_GetObjectItemCaseSensitive(model, "byte_fallback");
    if (!cJSON_IsArray(vocab)) return posemb_fail(err, POSEMB_EFORMAT, "%s: model.vocab is not an array", path);
    int n = cJSON_GetArraySize(vocab);
    if (n > TOK_MAX_ID)
        return posemb_fail(err, POSEMB_EFORMAT, "%s: model.vocab has %d pieces, over the limit %d", path, n,
                           TOK_MAX_ID);
    if (bf && !cJSON_IsNull(bf) && !cJSON_IsBool(bf))
        return posemb_fail(err, POSEMB_EFORMAT, "%s: model.byte_fallback must be a boolean", path);
    h->byte_fallback = cJSON_IsTrue(bf);
    h->unk_id = -1;
    if (unk && !cJSON_IsNull(unk)) {
        if (!cJSON_IsNumber(unk) || unk->valuedouble < 0 || unk->valuedouble >= n ||
            unk->valuedouble != floor(unk->valuedouble))
            return posemb_fail(err, POSEMB_EFORMAT, "%s: model.unk_id must be an index into model.vocab (0..%d)", path,
                               n - 1);
        h->unk_id = (int32_t)unk->valuedouble;
    }
    h->min_score = INFINITY;
    h->scores = malloc((size_t)(n ? n : 1) * sizeof *h->scores);
    if (!h->scores) return posemb_fail(err, POSEMB_ENOMEM, "out of memory");
    int i = 0;
    for (const cJSON *e = vocab->child; e; e = e->next, i++) {
        posemb_status st = load_piece(t, e, i, path, err);
        if (st) return st;
    }
    return POSEMB_OK;
}

/* ------------------------------------------------------------ encoding */

/* Offers the path that ends at `to` with a piece (id) from `from`. */
static void relax(hf_lattice *l, size_t from, size_t to, double score, int32_t id)
{
    double cand = l->score[from] + score;
    if (l->from[to] < 0 || cand > l->score[to]) {
        l->score[to] = cand;
        l->from[to] = (int64_t)from;
        l->id[to] = id;
    }
}

/* Fills the best path to every character boundary of w[0..n); -1 when a
 * character has no piece and there is no unknown token. */
static int viterbi(const tok_hf *h, const char *w, size_t n, hf_lattice *l)
{
    const double unk_score = h->min_score - UNK_PENALTY;
    for (size_t i = 0; i <= n; i++) l->from[i] = -1;
    l->score[0] = 0;
    size_t pos = 0;
    while (pos < n) {
        size_t next = pos;
        tok_utf8_next((const uint8_t *)w, n, &next);
        int single = 0; /* a piece covers exactly this character */
        int32_t node = 0, child;
        for (size_t k = pos; k < n; k++) {
            int64_t r = tok_merges_get(&h->trie, node, (uint8_t)w[k], &child);
            if (r < 0) break;
            if (r > 0) {
                relax(l, pos, k + 1, h->scores[r - 1], (int32_t)(r - 1));
                single |= k + 1 == next;
            }
            node = child;
        }
        /* the unknown token only where nothing covers exactly this character; with no unk_id, an
         * error only when it would be on the best path so far, as the library */
        if (!single && h->unk_id >= 0) relax(l, pos, next, unk_score, h->unk_id);
        else if (!single && (l->from[next] < 0 || l->score[pos] + unk_score > l->score[next])) return -1;
        pos = next;
    }
    return 0;
}

/* Pushes w[a..b), one piece of the best path (fused unknowns included), as
 * the library's tokenize: its id when the text is a piece, else its bytes
 * when byte_fallback has them all, else the unknown token. */
static posemb_status push_piece(const posemb_tokenizer *t, const char *w, size_t a, size_t b, tok_out *o)
{
    const tok_hf *h = t->hf;
    int32_t id = tok_map_get(&t->vocab, w + a, b - a);
    if (id < 0 && h->byte_fallback) {
        size_t k = a;
        while (k < b && h->byte_id[(uint8_t)w[k]] >= 0) k++;
        for (size_t j = a; k == b && j < b; j++) {
            int32_t bid = h->byte_id[(uint8_t)w[j]];
            posemb_status st = tok_out_push(o, bid, t->id_str[bid], t->id_len[bid]);
            if (st) return st;
        }
        if (k == b) return POSEMB_OK;
    }
    if (id < 0) id = h->unk_id;
    return tok_out_push(o, id, t->id_str[id], t->id_len[id]);
}

posemb_status hf_unigram_word(const posemb_tokenizer *t, const char *w, size_t n, hf_bpe_scratch *s, tok_out *o)
{
    const tok_hf *h = t->hf;
    if (!n) return POSEMB_OK;
    hf_lattice *l = hf_scratch_lattice(s, n + 1);
    if (!l) return posemb_fail(o->err, POSEMB_ENOMEM, "out of memory");
    if (viterbi(h, w, n, l)) {
        char q[64];
        return posemb_fail(o->err, POSEMB_EFORMAT,
                           "'%s' holds a character that no Unigram piece covers, and the model has no unk_id",
                           tok_quote(w, n, q, sizeof q));
    }
    /* back from the end: the pieces' starts, fusing runs of unknowns */
    size_t k = 0;
    int last_unk = 0;
    for (size_t end = n; end > 0; end = (size_t)l->from[end]) {
        int unk = l->id[end] == h->unk_id;
        if (!(unk && last_unk)) l->cut[k++] = end; /* an unknown after one: the piece to its right grows */
        last_unk = unk;
    }
    size_t a = 0;
    for (size_t i = k; i-- > 0;) { /* cut[i] ends a piece that starts at a */
        size_t b = l->cut[i];
        posemb_status st = push_piece(t, w, a, b, o);
        if (st) return st;
        a = b;
    }
    return POSEMB_OK;
}
