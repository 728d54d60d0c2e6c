/* Spec strings: canonical forms, parameters and their checkpoint names,
 * and one clear error for each kind of bad spec. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "posemb/pe.h"
#include "posemb/rng.h"
#include "testutil.h"
#include "pe/pe_internal.h"
#include "core/arena_internal.h"
#include "core/error_internal.h"

static const posemb_pe_dims DIMS = {.dim = 64, .n_heads = 4, .n_layers = 2, .max_len = 32, .max_threads = 1};

static posemb_pe *ok(const char *spec)
{
    posemb_error err;
    posemb_pe *p;
    if (posemb_pe_create(&p, spec, &DIMS, &err)) fail_msg("posemb_pe_create(%s): %s", spec, err.msg);
    return p;
}

static void bad(const char *spec, const char *needle)
{
    posemb_error err;
    posemb_pe *p = (posemb_pe *)0x1;
    posemb_error_clear(&err);
    assert_int_equal(posemb_pe_create(&p, spec, &DIMS, &err), POSEMB_EINVAL);
    assert_null(p);
    if (!strstr(err.msg, needle)) fail_msg("spec '%s': message '%s' lacks '%s'", spec, err.msg, needle);
    assert_null(strchr(err.msg, '\n'));
}

static void test_canonical(void **state)
{
    const char *cases[][2] = {
        {"none", "none"},
        {"ape", "ape:integration=add"},
        {"sin", "sin:layout=interleaved,base=10000,integration=add"},
        {"lsin:layout=halves", "lsin:layout=halves,base=10000,integration=add"},
        {"ape:integration=concat,width=32", "ape:integration=concat,width=32"},
        {"rpe:k=64,values=off", "rpe:k=64,values=off"},
        {"srpe", "srpe:k=64,values=on,base=10000"},
        {"rope:base=500000,pairing=interleaved", "rope:base=500000,pairing=interleaved,frac=1,scaling=none"},
        {"rope:scaling=ntk,factor=4", "rope:base=10000,pairing=halves,frac=1,scaling=ntk,factor=4"},
        {"rope:layers=1|0", "rope:base=10000,pairing=halves,frac=1,scaling=none,layers=0-1"},
        {"ape+t5:layers=1", "ape:integration=add+t5:buckets=32,max_distance=128,bidirectional=on,layers=1"},
        {"alibi", "alibi"},
        {"alibi:sides=same", "alibi"},
        {"alibi:sides=mirror", "alibi:sides=mirror"},
        {"alibi:right=1", "alibi"},
        {"alibi:right=0.5", "alibi:right=0.5"},
        {"alibi:scale=2,right=0.5", "alibi:right=0.5,scale=2"},
        {"t5", "t5:buckets=32,max_distance=128,bidirectional=on"},
        {"rpe + ape", "ape:integration=add+rpe:k=64,values=on"},
        {"lsin+lsrpe:k=16", "lsin:layout=interleaved,base=10000,integration=add+lsrpe:k=16,values=on,base=10000"},
        {"relative_key_query", "relative_key_query"},
        {"sin:scale=0.5,learned_scale=on",
         "sin:layout=interleaved,base=10000,integration=add,scale=0.5,learned_scale=on"},
        {"ape:scale=1", "ape:integration=add"},
        {"rpe:init_std=0.16", "rpe:k=64,values=on,init_std=0.16"},
        {"rpe:init_std=0.02", "rpe:k=64,values=on"},
        {"tupe", "tupe:share=on,cls=off,ln=on,scale_factor=2"},
        {"tupe:init_std=0.1,cls=on,share=off", "tupe:share=off,cls=on,ln=on,scale_factor=2,init_std=0.1"},
        {"tupe:scale_factor=1,ln=off,layers=1", "tupe:share=on,cls=off,ln=off,scale_factor=1,layers=1"},
        {"tupe:cls=on+random:max=20", "tupe:share=on,cls=on,ln=on,scale_factor=2+random:max=20"},
        {"lrope", "lrope:base=10000,pairing=halves,per_head=off"},
        {"ssmax+lrope:per_head=on", "lrope:base=10000,pairing=halves,per_head=on+ssmax:s=0.43"},
        {"ssmax:s=0.5,layers=1", "ssmax:s=0.5,layers=1"},
        {"temperature+rope:layers=0",
         "rope:base=10000,pairing=halves,frac=1,scaling=none,layers=0+temperature:attn_scale=0.1,floor_scale=8192"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        posemb_pe *p = ok(cases[i][0]);
        assert_string_equal(posemb_pe_spec(p), cases[i][1]);
        posemb_pe *again = ok(posemb_pe_spec(p)); /* the canonical spec parses to itself */
        assert_string_equal(posemb_pe_spec(again), cases[i][1]);
        posemb_pe_free(again);
        posemb_pe_free(p);
    }
}

/* Parameter tensors, names, shapes and hooks of each family. */
static void test_params(void **state)
{
    struct {
        const char *spec;
        int n_params;
        const char *first;
        int64_t r, c;
        int input, qk, logits, values;
    } cases[] = {
        {"none", 0, NULL, 0, 0, 0, 0, 0, 0},
        {"ape", 1, "position_embeddings.weight", 32, 64, 1, 0, 0, 0},
        {"sin", 0, NULL, 0, 0, 1, 0, 0, 0},
        {"lsin", 1, "position_frequencies", 32, 0, 1, 0, 0, 0},
        {"ape:integration=concat,width=16", 3, "position_embeddings.weight", 32, 16, 1, 0, 0, 0},
        {"rpe:k=8", 4, "rpe.key.weight", 17, 16, 0, 0, 1, 1},
        {"rpe:k=8,values=off", 2, "rpe.key.weight", 17, 16, 0, 0, 1, 0},
        {"sin:learned_scale=on", 1, "position_scale", 1, 0, 1, 0, 0, 0},
        {"srpe", 0, NULL, 0, 0, 0, 0, 1, 1},
        {"lsrpe", 2, "rpe.frequencies", 8, 0, 0, 0, 1, 1},
        {"relative_key", 2, "distance_embedding.weight", 63, 16, 0, 0, 1, 0},
        {"rope", 0, NULL, 0, 0, 0, 1, 0, 0},
        {"alibi", 0, NULL, 0, 0, 0, 0, 1, 0},
        {"t5", 1, "relative_attention_bias.weight", 32, 4, 0, 0, 1, 0},
        {"ape+rpe:k=8", 5, "position_embeddings.weight", 32, 64, 1, 0, 1, 1},
        /* table, LayerNorm weight and bias, U^Q and U^K [H d, D] */
        {"tupe", 5, "tupe.pos.weight", 32, 64, 0, 1, 1, 0},
        /* f = 1 needs no q/k hook; per layer U^Q, U^K and two [H] thetas */
        {"tupe:scale_factor=1,ln=off,share=off,cls=on", 7, "tupe.pos.weight", 32, 64, 0, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        posemb_pe *p = ok(cases[i].spec);
        assert_int_equal(posemb_pe_n_params(p), cases[i].n_params);
        assert_int_equal(posemb_pe_has_input(p), cases[i].input);
        assert_int_equal(posemb_pe_has_qk(p) != 0, cases[i].qk);
        assert_int_equal(posemb_pe_has_logits(p) != 0, cases[i].logits);
        assert_int_equal(posemb_pe_has_values(p) != 0, cases[i].values);
        if (cases[i].first) {
            const posemb_pe_param *t = posemb_pe_get_param(p, 0);
            assert_string_equal(t->name, cases[i].first);
            assert_int_equal(t->shape[0], cases[i].r);
            assert_int_equal(t->shape[1], cases[i].c);
        }
        size_t total = 0;
        for (int k = 0; k < posemb_pe_n_params(p); k++) total += posemb_pe_get_param(p, k)->numel;
        assert_int_equal(total, posemb_pe_n_floats(p));
        posemb_pe_free(p);
    }
    posemb_pe *tp = ok("tupe:share=off,cls=on");
    const posemb_pe_param *uk1 = posemb_pe_find_param(tp, "tupe.pos_k.weight", 1),
                          *t2 = posemb_pe_find_param(tp, "tupe.others_to_cls", 0);
    assert_true(uk1 && uk1->scope == POSEMB_PE_SCOPE_LAYER && uk1->layer == 1 && uk1->shape[0] == 64);
    assert_true(t2 && t2->scope == POSEMB_PE_SCOPE_MODEL && t2->shape[0] == 4 && !t2->decay);
    posemb_pe_free(tp);
    posemb_pe *p = ok("rpe:k=8");
    const posemb_pe_param *v1 = posemb_pe_find_param(p, "rpe.value.weight", 1);
    assert_non_null(v1);
    assert_int_equal(v1->layer, 1);
    assert_int_equal(v1->scope, POSEMB_PE_SCOPE_LAYER);
    posemb_pe_free(p);
}

static void test_errors(void **state)
{
    bad("", "empty");
    bad("bogus", "unknown PE 'bogus'");
    bad("ape+sin", "combine at most one absolute PE");
    bad("ape:integration=concat,scale=2", "options scale and learned_scale need integration=add");
    bad("sin:scale=0", "scale");
    bad("srpe:init_std=0.1", "has no option 'init_std'");
    bad("rpe+t5", "combine at most one absolute PE");
    bad("ssmax+temperature", "both ssmax and temperature are logit-scale PEs");
    bad("alibi+ssmax", "ssmax scales q.k, not alibi's bias or values");
    bad("rpe+temperature", "temperature scales q.k, not rpe's bias or values");
    bad("ssmax:s=0", "ssmax");
    bad("lrope:per_head=maybe", "per_head");
    bad("rpe:kk=3", "rpe has no option 'kk'");
    bad("rpe:k=0", "outside");
    bad("rpe:k=abc", "not an integer");
    bad("rpe:k=3,k=4", "given twice");
    bad("rpe:k", "not key=value");
    bad("rpe:", "no options");
    bad("rpe:k=3,", "trailing");
    bad("rpe:values=maybe", "not one of");
    bad("sin:layout=diagonal", "interleaved|halves");
    bad("none+rpe", "stands alone");
    bad("none:k=1", "stands alone");
    bad("ape:layout=halves", "ape has no option 'layout'");
    bad("ape:width=32", "needs integration=concat");
    bad("rope:base=-1", "outside");
    bad("rope:frac=0.01", "rotates 0 of 16");
    bad("t5:buckets=7", "even bucket count");
    bad("+", "empty");
    bad("r\npe", "control character (byte 0x0a at offset 1)");
    bad("rpe:k=99999999999999999999", "k=99999999999999999999 is outside");
    bad("rope:factor=2", "factor needs scaling");
    bad("rope:layers=2", "layer 2 is outside 0..1");
    bad("alibi:layers=0|x", "not a list of layers and ranges");
    bad("alibi:sides=left", "alibi option sides='left' is not one of same|mirror");
    bad("alibi:right=0", "alibi option right=0 is outside [0.015625, 64]");
    bad("alibi:layers=1-0", "not a list of layers and ranges");
    bad("ape:layers=0", "ape has no option 'layers'");
    bad("tupe:cls=maybe", "tupe option cls='maybe' is not one of");
    bad("tupe:scale_factor=0", "tupe option scale_factor=0 is outside");
    bad("tupe+rope", "combine at most one absolute PE");
    bad("tupe:k=3", "tupe has no option 'k'");
    bad("tupe+random:max=33", "tupe takes positions below 32");
    posemb_pe_dims odd = {.dim = 63, .n_heads = 3, .n_layers = 1, .max_len = 8, .max_threads = 1};
    posemb_error err;
    posemb_pe *p;
    assert_int_equal(posemb_pe_create(&p, "sin", &odd, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "even width"));
    posemb_pe_dims nodiv = {.dim = 64, .n_heads = 3, .n_layers = 1, .max_len = 8, .max_threads = 1};
    assert_int_equal(posemb_pe_create(&p, "ape", &nodiv, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "multiple of 3 heads"));
}

/* The review's findings: numbers round-trip through the canonical spec; the
 * parameter layout does not depend on the order of the components; the
 * matrices of a combination have distinct names. */
static void test_canonical_numbers_and_order(void **state)
{
    posemb_pe *p = ok("rope:base=1234567,frac=0.3");
    assert_string_equal(posemb_pe_spec(p), "rope:base=1234567,pairing=halves,frac=0.3,scaling=none");
    posemb_pe_free(p);
    /* fuzz_pe_spec's finding: "%g" wrote base=5.0002e+06, whose '+' split the
     * canonical spec into components; an exponent's sign is part of the number */
    const char *exponents[][2] = {
        {"rope:base=5000200", "rope:base=5.0002e06,pairing=halves,frac=1,scaling=none"},
        {"rope:base=5e+06+ape", "ape:integration=add+rope:base=5e06,pairing=halves,frac=1,scaling=none"},
        {"ape+rope:base=1E+5", "ape:integration=add+rope:base=100000,pairing=halves,frac=1,scaling=none"},
    };
    for (int i = 0; i < 3; i++) {
        p = ok(exponents[i][0]);
        assert_string_equal(posemb_pe_spec(p), exponents[i][1]);
        posemb_pe *again = ok(posemb_pe_spec(p));
        assert_string_equal(posemb_pe_spec(again), exponents[i][1]);
        posemb_pe_free(again);
        posemb_pe_free(p);
    }
    posemb_pe *a = ok("ape+rpe:k=2"), *b = ok("rpe:k=2+ape");
    assert_string_equal(posemb_pe_spec(a), posemb_pe_spec(b));
    assert_int_equal(posemb_pe_n_params(a), posemb_pe_n_params(b));
    for (int i = 0; i < posemb_pe_n_params(a); i++) {
        assert_string_equal(posemb_pe_get_param(a, i)->name, posemb_pe_get_param(b, i)->name);
        assert_int_equal(posemb_pe_get_param(a, i)->offset, posemb_pe_get_param(b, i)->offset);
    }
    assert_int_equal(posemb_pe_get_param(a, 0)->offset, 0);
    assert_string_equal(posemb_pe_get_param(a, 0)->name, "position_embeddings.weight");
    posemb_pe_free(a);
    posemb_pe_free(b);
    const char *combos[] = {"sin+rope", "lsin+lsrpe", "sin+srpe", "ape+t5", "lsin+relative_key_query"};
    for (int i = 0; i < 5; i++) {
        posemb_pe *c = ok(combos[i]);
        posemb_error err;
        assert_int_equal(posemb_pe_alloc(c, &err), POSEMB_OK);
        posemb_arena ar;
        posemb_arena_init(&ar, 0);
        posemb_pe_export ex;
        assert_int_equal(posemb_pe_export_matrices(c, 8, &ar, &ex, &err), POSEMB_OK); /* aborts on a duplicate name */
        assert_true(ex.n >= 2);
        posemb_arena_free(&ar);
        posemb_pe_free(c);
    }
}

/* APE positions past the table are refused with a message, not read. */
static void test_position_limit(void **state)
{
    posemb_pe *p = ok("ape");
    posemb_error err;
    assert_int_equal(posemb_pe_alloc(p, &err), POSEMB_OK);
    int32_t pos[2] = {3, 32};
    float x[2 * 64] = {0}, scratch[2 * 64];
    assert_int_equal(posemb_pe_input_forward(p, pos, 2, x, x, scratch, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "position 32"));
    posemb_pe_free(p);
    p = ok("tupe"); /* its table bounds the positions as ape's does */
    assert_int_equal(posemb_pe_check_positions(p, pos, 2, &err), POSEMB_ERANGE);
    assert_non_null(strstr(err.msg, "past tupe's table of 32 positions"));
    assert_int_equal(posemb_pe_reserve(p, 33, &err), POSEMB_ERANGE);
    posemb_pe_free(p);
    p = ok("sin"); /* sinusoids extrapolate */
    assert_int_equal(posemb_pe_check_positions(p, pos, 2, &err), POSEMB_OK);
    posemb_pe_free(p);
}

/* ape:rms=R adds each row of its table scaled to RMS R, in the row's own direction; the
 * canonical spec keeps it and a bad R is one clear error. */
static void test_ape_rms(void **state)
{
    posemb_pe *p = ok("ape:rms=0.05");
    assert_string_equal(posemb_pe_spec(p), "ape:rms=0.05,integration=add");
    posemb_error err;
    assert_int_equal(posemb_pe_alloc(p, &err), POSEMB_OK);
    posemb_rng rng;
    posemb_rng_seed(&rng, 7, 0);
    posemb_pe_init_params(p, &rng);
    int32_t pos[3] = {0, 5, 31};
    float x[3 * 64] = {0}, y[3 * 64], scratch[3 * 64 + 1];
    assert_int_equal(posemb_pe_input_forward(p, pos, 3, x, y, scratch, &err), POSEMB_OK);
    const float *table = posemb_pe_get_param(p, 0)->data;
    for (int t = 0; t < 3; t++) {
        double ss = 0, dot = 0, vv = 0;
        for (int i = 0; i < 64; i++) {
            const double v = table[pos[t] * 64 + i], o = y[t * 64 + i];
            ss += o * o, dot += o * v, vv += v * v;
        }
        assert_float_equal(sqrt(ss / 64), 0.05, 1e-6);      /* its size: R */
        assert_float_equal(dot / sqrt(ss * vv), 1.0, 1e-6); /* its direction: the row's */
        assert_true(fabs(sqrt(vv / 64) - 0.05) > 0.01);     /* the row itself is drawn at 0.02 */
    }
    posemb_pe_free(p);
    bad("ape:rms=0", "ape option rms=0 is outside");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_canonical), cmocka_unit_test(test_params),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_position_limit),
        cmocka_unit_test(test_ape_rms),   cmocka_unit_test(test_canonical_numbers_and_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
