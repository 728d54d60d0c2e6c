/* Checkpoints: saved in Hugging Face's layout (tensor names and shapes equal
 * HF's own files for the types HF has), loaded back losslessly for every
 * PE, half precision read as float32, and malformed folders refused with a
 * message naming the tensor or key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "formats/inputs.h"
#include "posemb/model.h"
#include "posemb/safetensors.h"
#include "testutil.h"
#include "model/model_internal.h"
#include "model/model_impl.h"
#include "formats/safetensors_internal.h"

static char *dir;

static int setup(void **state)
{
    dir = tu_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    tu_rmtree(dir);
    free(dir);
    return 0;
}

static int small_head_dim; /* Llama: 0 for hidden / heads */
static int small_pre_ln;   /* BERT, RoBERTa: pre-LN layers */

static posemb_model *small(posemb_arch arch, const char *spec, posemb_head head, int labels)
{
    posemb_config c;
    posemb_config_defaults(&c, arch);
    c.vocab_size = 200;
    c.hidden = 64;
    c.layers = 2;
    c.heads = 4;
    c.max_position = 64;
    c.intermediate = arch == POSEMB_GPT2 ? 256 : 128; /* the golden models' sizes */
    if (arch == POSEMB_ROBERTA) c.type_vocab = 1;
    if (arch == POSEMB_LLAMA) c.kv_heads = 2;
    c.head_dim = small_head_dim;
    c.pre_ln = small_pre_ln && (arch == POSEMB_BERT || arch == POSEMB_ROBERTA);
    snprintf(c.pe, sizeof c.pe, "%s", spec);
    posemb_error err;
    posemb_model *m;
    if (posemb_config_set_head(&c, head, labels, &err) || posemb_model_create(&m, &c, &err))
        fail_msg("%s: %s", spec, err.msg);
    posemb_model_init(m, 17);
    return m;
}

/* Every tensor of `ours` is in `theirs` with the same shape and vice versa, buffers aside. */
static void same_layout(const char *ours, const char *theirs)
{
    posemb_st_file a, b;
    posemb_error err;
    if (posemb_st_open(&a, ours, &err) || posemb_st_open(&b, theirs, &err)) fail_msg("%s", err.msg);
    int buffers = 0;
    for (int i = 0; i < b.n_entries; i++) {
        const posemb_st_entry *e = &b.entries[i], *f = posemb_st_find(&a, e->name);
        if (!posemb_dtype_is_float(e->dtype) || strstr(e->name, "masked_bias")) {
            buffers++;
            continue;
        }
        if (!f) fail_msg("%s: HF has %s, we did not write it", ours, e->name);
        assert_int_equal(f->ndim, e->ndim);
        for (int k = 0; k < e->ndim; k++) assert_int_equal(f->shape[k], e->shape[k]);
    }
    assert_int_equal(a.n_entries, b.n_entries - buffers);
    posemb_st_close(&a);
    posemb_st_close(&b);
}

/* Our BertModel (ape, relative_key) and GPT2Model write exactly the tensors HF's files hold. */
static void test_hf_layout(void **state)
{
    if (!tu_have_shared("HF layout")) return;
    struct {
        posemb_arch arch;
        const char *pe, *golden;
    } cases[] = {
        {POSEMB_BERT, "ape", "bert_abs"}, {POSEMB_BERT, "relative_key", "bert_relk"}, {POSEMB_GPT2, "ape", "gpt2"}};
    for (int i = 0; i < 3; i++) {
        posemb_model *m = small(cases[i].arch, cases[i].pe, POSEMB_HEAD_NONE, 0);
        char path[1200], theirs[1200];
        snprintf(path, sizeof path, "%s/%s", dir, cases[i].golden);
        posemb_error err;
        if (posemb_model_save(m, path, &err)) fail_msg("%s", err.msg);
        snprintf(path, sizeof path, "%s/%s/model.safetensors", dir, cases[i].golden);
        snprintf(theirs, sizeof theirs, "%s/golden/%s/model.safetensors", POSEMB_SHARED, cases[i].golden);
        same_layout(path, theirs);
        posemb_model_free(m);
    }
}

/* Save and load give back every float, for every PE and head; configs round-trip. */
static void test_round_trip(void **state)
{
    struct {
        posemb_arch arch;
        const char *pe;
        posemb_head head;
        int labels;
        const char *arch_name;
    } cases[] = {
        {POSEMB_BERT, "ape", POSEMB_HEAD_MLM, 0, "BertForMaskedLM"},
        {POSEMB_BERT, "relative_key_query", POSEMB_HEAD_CLASSIFY, 3, "BertForSequenceClassification"},
        {POSEMB_BERT, "lsin:layout=halves+lsrpe:k=8", POSEMB_HEAD_SPAN, 0, "BertForQuestionAnswering"},
        {POSEMB_BERT, "ape:integration=concat,width=16+t5", POSEMB_HEAD_REGRESS, 1, "BertForSequenceClassification"},
        {POSEMB_ROBERTA, "rpe:k=16,values=off", POSEMB_HEAD_MLM, 0, "RobertaForMaskedLM"},
        {POSEMB_ROBERTA, "alibi", POSEMB_HEAD_CLASSIFY, 2, "RobertaForSequenceClassification"},
        {POSEMB_GPT2, "rope:base=500000,pairing=interleaved", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_GPT2, "sin", POSEMB_HEAD_NONE, 0, "GPT2Model"},
        {POSEMB_GPT2, "kerple:kind=power", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_BERT, "ape+sandwich", POSEMB_HEAD_MLM, 0, "BertForMaskedLM"},
        {POSEMB_GPT2, "rope:scaling=yarn,factor=4,original=8,p=0.5", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_GPT2, "ape+fire:width=16,c=0.25,threshold=64", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_GPT2, "cope:npos=16", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_GPT2, "fox:bias=2.5", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_GPT2, "ape+random:max=64", POSEMB_HEAD_CLM, 0, "GPT2LMHeadModel"},
        {POSEMB_BERT, "random:max=40+rope", POSEMB_HEAD_MLM, 0, "BertForMaskedLM"},
        {POSEMB_BERT, "lsin:scale=0.03,learned_scale=on+rpe:k=8", POSEMB_HEAD_CLASSIFY, 2,
         "BertForSequenceClassification"},
        {POSEMB_LLAMA, "rope:base=500000", POSEMB_HEAD_CLM, 0, "LlamaForCausalLM"},
        {POSEMB_LLAMA, "alibi", POSEMB_HEAD_CLM, 0, "LlamaForCausalLM"},
        {POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=16", POSEMB_HEAD_NONE, 0, "LlamaModel"},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        posemb_model *m = small(cases[i].arch, cases[i].pe, cases[i].head, cases[i].labels), *back;
        char path[1200];
        snprintf(path, sizeof path, "%s/rt%d", dir, i);
        posemb_error err;
        if (posemb_model_save(m, path, &err) || posemb_model_load(&back, path, &err))
            fail_msg("%s: %s", cases[i].pe, err.msg);
        const posemb_config *a = posemb_model_config(m), *b = posemb_model_config(back);
        assert_string_equal(b->architecture, cases[i].arch_name);
        assert_string_equal(posemb_pe_spec(posemb_model_pe(back)), posemb_pe_spec(posemb_model_pe(m)));
        assert_int_equal(b->head, a->head);
        assert_int_equal(b->num_labels, a->num_labels);
        assert_true(b->ln_eps == a->ln_eps && b->hidden_dropout == a->hidden_dropout);
        assert_int_equal(posemb_model_n_floats(back), posemb_model_n_floats(m));
        assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m),
                            posemb_model_n_floats(m) * sizeof(float));
        posemb_model_free(back);
        posemb_model_free(m);
    }
}

/* A Llama whose head_dim is not hidden / heads saves it (HF's key) and loads
 * back the same model: q_proj [heads x head_dim, hidden], o_proj its transpose. */
static void test_llama_head_dim(void **state)
{
    small_head_dim = 24;
    posemb_model *m = small(POSEMB_LLAMA, "rope", POSEMB_HEAD_CLM, 0), *back;
    small_head_dim = 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/head_dim", dir);
    posemb_error err;
    if (posemb_model_save(m, path, &err) || posemb_model_load(&back, path, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_model_config(back)->head_dim, 24);
    assert_int_equal(posemb_config_head_dim(posemb_model_config(back)), 24);
    const posemb_param *q = posemb_model_find(back, "layers.1.self_attn.q_proj.weight");
    const posemb_param *o = posemb_model_find(back, "layers.1.self_attn.o_proj.weight");
    assert_non_null(q);
    assert_non_null(o);
    assert_true(q->shape[0] == 4 * 24 && q->shape[1] == 64 && o->shape[0] == 64 && o->shape[1] == 4 * 24);
    assert_int_equal(posemb_model_n_floats(back), posemb_model_n_floats(m));
    assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float));
    posemb_model_free(back);
    posemb_model_free(m);
}

/* longrope's factors travel inside the folder: config.json carries them
 * under rope_scaling (as HF writes longrope) and the stored spec names
 * factors=config.json, read relative to the folder wherever it is moved;
 * the model then computes what it computed before. */
static void test_longrope_folder(void **state)
{
    posemb_model *m = small(POSEMB_GPT2,
                            "rope:scaling=longrope,factor=4,original=8,factors=" POSEMB_TESTDATA "/longrope_hd16.json",
                            POSEMB_HEAD_CLM, 0),
                 *back;
    char path[1200], moved[1200];
    snprintf(path, sizeof path, "%s/longrope", dir);
    snprintf(moved, sizeof moved, "%s/elsewhere", dir);
    posemb_error err;
    if (posemb_model_save(m, path, &err)) fail_msg("%s", err.msg);
    assert_int_equal(rename(path, moved), 0);
    if (posemb_model_load(&back, moved, &err)) fail_msg("%s", err.msg);
    char want[1400];
    snprintf(want, sizeof want, "factors=%s/config.json", moved);
    assert_non_null(strstr(posemb_pe_spec(posemb_model_pe(back)), want));
    int32_t ids[2 * 20];
    for (int i = 0; i < 40; i++) ids[i] = (i * 7) % 200;
    posemb_batch b = {.B = 2, .T = 20, .ids = ids}; /* 20 > original: the long factors act */
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
    size_t n = (size_t)40 * posemb_model_config(m)->hidden;
    float *h = malloc(n * sizeof *h);
    memcpy(h, posemb_model_hidden(m, 2), n * sizeof *h);
    assert_int_equal(posemb_model_forward(back, &b, &err), POSEMB_OK);
    assert_memory_equal(posemb_model_hidden(back, 2), h, n * sizeof *h);
    free(h);
    posemb_model_free(back);
    posemb_model_free(m);
}

/* A Llama with a scaled RoPE is written as HF writes it (rope_theta,
 * rope_scaling), so that HF reads the same RoPE: without posemb's own key
 * the config gives back the same spec. */
static void test_llama_rope_scaling_for_hf(void **state)
{
    const char *specs[] = {"rope:base=500000,scaling=yarn,factor=4,original=16,beta_fast=16",
                           "rope:scaling=llama3,factor=8,original=16,low_freq_factor=2,high_freq_factor=6",
                           "rope:base=20000,scaling=linear,factor=2"};
    for (int i = 0; i < 3; i++) {
        posemb_model *m = small(POSEMB_LLAMA, specs[i], POSEMB_HEAD_CLM, 0);
        char path[1200], file[1300];
        snprintf(path, sizeof path, "%s/hfrope%d", dir, i);
        posemb_error err;
        if (posemb_model_save(m, path, &err)) fail_msg("%s", err.msg);
        snprintf(file, sizeof file, "%s/config.json", path);
        char *text;
        size_t n;
        assert_int_equal(posemb_read_data_file(file, 1 << 20, &text, &n, &err), POSEMB_OK);
        assert_non_null(strstr(text, "\"rope_scaling\""));
        char *own = strstr(text, "\"posemb_pe\"");
        assert_non_null(own);
        memcpy(own, "\"ignored__\"", 11); /* HF's view: no posemb key */
        assert_int_equal(tu_write_file(file, text, n), 0);
        free(text);
        posemb_config c;
        if (posemb_config_load(&c, file, &err)) fail_msg("%s", err.msg);
        posemb_pe *a, *b;
        const posemb_pe_dims *d = posemb_pe_get_dims(posemb_model_pe(m));
        assert_int_equal(posemb_pe_create(&a, c.pe, d, &err), POSEMB_OK);
        assert_int_equal(posemb_pe_create(&b, specs[i], d, &err), POSEMB_OK);
        assert_string_equal(posemb_pe_spec(a), posemb_pe_spec(b));
        posemb_pe_free(a);
        posemb_pe_free(b);
        posemb_model_free(m);
    }
}

/* Saves m as dir/name (into path) and opens its model.safetensors (into file) as f. */
static void save_open(const posemb_model *m, const char *name, char path[1200], char file[1300], posemb_st_file *f)
{
    posemb_error err;
    snprintf(path, 1200, "%s/%s", dir, name);
    if (posemb_model_save(m, path, &err)) fail_msg("%s", err.msg);
    snprintf(file, 1300, "%s/model.safetensors", path);
    if (posemb_st_open(f, file, &err)) fail_msg("%s", err.msg);
}

/* Tensor e of f as float32, malloc'ed (the caller frees it). */
static float *read_tensor(const posemb_st_file *f, const posemb_st_entry *e)
{
    posemb_error err;
    float *x = malloc((size_t)e->numel * sizeof(float));
    if (!x || posemb_st_read_f32(f, e, x, &err)) fail_msg("%s: %s", e->name, x ? err.msg : "out of memory");
    return x;
}

/* A sharded folder (model.safetensors.index.json and its shards, as HF
 * writes large models) loads as the single file does; an index naming a
 * file outside the folder is refused. */
static void test_sharded(void **state)
{
    posemb_model *m = small(POSEMB_LLAMA, "rope", POSEMB_HEAD_CLM, 0), *back;
    char path[1200], file[1300];
    posemb_error err;
    posemb_st_file f;
    save_open(m, "sharded", path, file, &f);
    posemb_st_writer w[2];
    char index[8192] = "{\"metadata\": {}, \"weight_map\": {";
    for (int s = 0; s < 2; s++) posemb_st_writer_init(&w[s]);
    float *buf[256] = {0};
    for (int i = 0; i < f.n_entries && i < 256; i++) {
        const posemb_st_entry *e = &f.entries[i];
        int s = i % 2;
        buf[i] = read_tensor(&f, e);
        assert_int_equal(posemb_st_writer_add_f32(&w[s], e->name, e->ndim, e->shape, buf[i], &err), POSEMB_OK);
        snprintf(index + strlen(index), sizeof index - strlen(index), "%s\"%s\": \"model-0000%d-of-00002.safetensors\"",
                 i ? ", " : "", e->name, s + 1);
    }
    snprintf(index + strlen(index), sizeof index - strlen(index), "}}");
    for (int s = 0; s < 2; s++) {
        snprintf(file, sizeof file, "%s/model-0000%d-of-00002.safetensors", path, s + 1);
        assert_int_equal(posemb_st_write(&w[s], file, &err), POSEMB_OK);
        posemb_st_writer_free(&w[s]);
    }
    for (int i = 0; i < 256; i++) free(buf[i]);
    posemb_st_close(&f);
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    assert_int_equal(remove(file), 0);
    snprintf(file, sizeof file, "%s/model.safetensors.index.json", path);
    assert_int_equal(tu_write_file(file, index, strlen(index)), 0);
    if (posemb_model_load(&back, path, &err)) fail_msg("%s", err.msg);
    assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float));
    posemb_model_free(back);
    char *bad = strstr(index, "model-00001-of");
    memcpy(bad, "../dl-00001-of", 14);
    assert_int_equal(tu_write_file(file, index, strlen(index)), 0);
    assert_int_equal(posemb_model_load(&back, path, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "is not a .safetensors file name"));
    posemb_model_free(m);
}

/* A lenient read (--init, fine-tuning) counts what it leaves out: the
 * model's tensors the file lacks, and the file's tensors the model does not
 * read (an HF head it lacks, another PE's tables), naming the first; a
 * buffer that carries no parameters (BERT's position_ids) is not counted. */
static void test_init_report(void **state)
{
    posemb_model *m = small(POSEMB_BERT, "rpe", POSEMB_HEAD_MLM, 0);
    char path[1200], file[1300];
    posemb_error err;
    posemb_st_file f;
    save_open(m, "initrep", path, file, &f);
    posemb_st_writer w;
    posemb_st_writer_init(&w);
    static float zeros[2 * 64], ids[64];
    int64_t ids_shape[2] = {1, 64}, nsp_shape[2] = {2, 64};
    assert_int_equal(posemb_st_writer_add_f32(&w, "bert.embeddings.position_ids", 2, ids_shape, ids, &err), POSEMB_OK);
    float *buf[256] = {0};
    for (int i = 0; i < f.n_entries && i < 256; i++) {
        const posemb_st_entry *e = &f.entries[i];
        buf[i] = read_tensor(&f, e);
        assert_int_equal(posemb_st_writer_add_f32(&w, e->name, e->ndim, e->shape, buf[i], &err), POSEMB_OK);
    }
    assert_int_equal(posemb_st_writer_add_f32(&w, "cls.seq_relationship.weight", 2, nsp_shape, zeros, &err), POSEMB_OK);
    posemb_st_close(&f);
    assert_int_equal(posemb_st_write(&w, file, &err), POSEMB_OK);
    posemb_st_writer_free(&w);
    for (int i = 0; i < 256; i++) free(buf[i]);

    posemb_init_report r;
    posemb_model *same = small(POSEMB_BERT, "rpe", POSEMB_HEAD_MLM, 0);
    posemb_model_init(same, 99);
    if (posemb_model_init_report(same, path, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.missing, 0);
    assert_int_equal(r.unread, 1); /* the NSP head; position_ids is a buffer */
    assert_string_equal(r.first_unread, "cls.seq_relationship.weight");
    assert_memory_equal(posemb_model_weights(same), posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float));

    /* ape instead of rpe: the table of positions is missing, the two layers' key and value distance tables unread. */
    posemb_model *other = small(POSEMB_BERT, "ape", POSEMB_HEAD_MLM, 0);
    if (posemb_model_init_report(other, path, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.missing, 1);
    assert_int_equal(r.unread, 5);
    if (strcmp(r.first_unread, "bert.encoder.layer.0.attention.self.rpe.key.weight"))
        fail_msg("first unread: %s", r.first_unread);
    int missing = -1;
    if (posemb_model_init_from(other, path, &missing, &err)) fail_msg("%s", err.msg);
    assert_int_equal(missing, 1);
    posemb_model_free(other);
    posemb_model_free(same);
    posemb_model_free(m);
}

/* An F16 and a BF16 copy of a golden checkpoint load (as float32) and give
 * HF's outputs within the precision of the format. */
static void test_half_precision(void **state)
{
    if (!tu_have_shared("half precision")) return;
    char src[1200];
    snprintf(src, sizeof src, "%s/golden/bert_abs", POSEMB_SHARED);
    posemb_dtype types[2] = {POSEMB_F16, POSEMB_BF16};
    double tol[2] = {5e-2, 3e-1};
    for (int k = 0; k < 2; k++) {
        posemb_model *ref, *half;
        posemb_error err;
        if (posemb_model_load(&ref, src, &err)) fail_msg("%s", err.msg);
        char path[1200], st_path[1300];
        snprintf(path, sizeof path, "%s/half%d", dir, k);
        if (posemb_model_save(ref, path, &err)) fail_msg("%s", err.msg);
        /* rewrite its model.safetensors in half precision */
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", path);
        posemb_st_writer w;
        posemb_st_writer_init(&w);
        uint16_t *bufs[256];
        int nb = 0;
        for (int i = 0; i < posemb_model_n_params(ref); i++) {
            const posemb_param *p = posemb_model_param(ref, i);
            uint16_t *h = bufs[nb++] = malloc(p->numel * sizeof *h);
            const float *x = posemb_model_weights(ref) + p->offset;
            for (size_t j = 0; j < p->numel; j++) h[j] = k ? posemb_f32_to_bf16(x[j]) : posemb_f32_to_f16(x[j]);
            assert_int_equal(posemb_st_writer_add(&w, p->name, types[k], p->ndim, p->shape, h, &err), POSEMB_OK);
        }
        assert_int_equal(posemb_st_write(&w, st_path, &err), POSEMB_OK);
        posemb_st_writer_free(&w);
        for (int i = 0; i < nb; i++) free(bufs[i]);
        if (posemb_model_load(&half, path, &err)) fail_msg("%s", err.msg);
        posemb_inputs in;
        snprintf(st_path, sizeof st_path, "%s/golden/bert_abs/inputs.json", POSEMB_SHARED);
        assert_int_equal(posemb_inputs_load(&in, st_path, &err), POSEMB_OK);
        posemb_batch b = {.B = in.B, .T = in.T, .ids = in.ids, .types = in.types, .mask = in.mask};
        assert_int_equal(posemb_model_forward(ref, &b, &err), POSEMB_OK);
        assert_int_equal(posemb_model_forward(half, &b, &err), POSEMB_OK);
        double worst = 0;
        const float *x = posemb_model_hidden(ref, 2), *y = posemb_model_hidden(half, 2);
        for (int i = 0; i < in.B * in.T * 64; i++) worst = fmax(worst, fabs(x[i] - y[i]));
        printf("%s checkpoint: last hidden state within %.3g of float32\n", k ? "BF16" : "F16", worst);
        assert_true(worst > 0 && worst < tol[k]);
        posemb_inputs_free(&in);
        posemb_model_free(ref);
        posemb_model_free(half);
    }
}

static void write_text(const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_int_equal(tu_write_file(path, text, strlen(text)), 0);
}

/* dir/name's text, malloc'ed (fails the test when it cannot be read). */
static char *read_text(const char *name)
{
    char path[1600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *text = calloc(1, 1 << 16);
    size_t n = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* Pre-LN encoders: RoBERTa's as HF's roberta-prelayernorm (model_type, class
 * names, the roberta_prelayernorm. prefix, attention.LayerNorm and
 * intermediate.LayerNorm, the final LayerNorm), BERT's with posemb_pre_ln;
 * both load back the same model; the keys that do not fit are refused. */
static void test_pre_ln_folders(void **state)
{
    struct {
        posemb_arch arch;
        posemb_head head;
        int labels;
        const char *arch_name, *config_has, *tensor;
    } cases[] = {
        {POSEMB_ROBERTA, POSEMB_HEAD_MLM, 0, "RobertaPreLayerNormForMaskedLM", "\"roberta-prelayernorm\"",
         "roberta_prelayernorm.encoder.layer.1.intermediate.LayerNorm.weight"},
        {POSEMB_ROBERTA, POSEMB_HEAD_CLASSIFY, 3, "RobertaPreLayerNormForSequenceClassification",
         "\"roberta-prelayernorm\"", "roberta_prelayernorm.LayerNorm.bias"},
        {POSEMB_ROBERTA, POSEMB_HEAD_NONE, 0, "RobertaPreLayerNormModel", "\"roberta-prelayernorm\"",
         "encoder.layer.0.attention.LayerNorm.weight"},
        {POSEMB_BERT, POSEMB_HEAD_MLM, 0, "BertForMaskedLM", "\"posemb_pre_ln\":\ttrue", "bert.LayerNorm.weight"},
    };
    small_pre_ln = 1;
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        posemb_model *m = small(cases[i].arch, "ape", cases[i].head, cases[i].labels), *back;
        char path[1200], file[1300];
        snprintf(path, sizeof path, "%s/preln%d", dir, i); /* config.json as cJSON prints it: tabs */
        posemb_error err;
        if (posemb_model_save(m, path, &err) || posemb_model_load(&back, path, &err)) fail_msg("%s", err.msg);
        snprintf(file, sizeof file, "preln%d/config.json", i);
        char *text = read_text(file);
        if (!strstr(text, cases[i].config_has)) fail_msg("%s lacks %s:\n%s", file, cases[i].config_has, text);
        free(text);
        posemb_st_file f;
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        if (posemb_st_open(&f, file, &err)) fail_msg("%s", err.msg);
        if (!posemb_st_find(&f, cases[i].tensor)) fail_msg("%s: no %s", file, cases[i].tensor);
        assert_null(posemb_st_find(&f, "encoder.layer.0.attention.output.LayerNorm.weight"));
        posemb_st_close(&f);
        const posemb_config *b = posemb_model_config(back);
        assert_int_equal(b->pre_ln, 1);
        assert_string_equal(b->architecture, cases[i].arch_name);
        assert_int_equal(posemb_model_n_floats(back), posemb_model_n_floats(m));
        assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m),
                            posemb_model_n_floats(m) * sizeof(float));
        posemb_model_free(back);
        posemb_model_free(m);
    }
    small_pre_ln = 0;
    posemb_model *out;
    posemb_error err;
    char path[1200];
    snprintf(path, sizeof path, "%s/preln0", dir);
    /* RoBERTa says pre-LN by its model_type, not by posemb's key */
    write_text("preln0/config.json", "{\"model_type\": \"roberta\", \"posemb_pre_ln\": true, \"hidden_size\": 64, "
                                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 200}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "\"posemb_pre_ln\" is for model_type bert"));
    write_text("preln0/config.json", "{\"model_type\": \"bert\", \"posemb_pre_ln\": \"yes\", \"hidden_size\": 64, "
                                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"vocab_size\": 200}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "posemb_pre_ln"));
    /* pre-LN weights under a post-LN config: the post-LN norms are missing, by name */
    write_text("preln0/config.json",
               "{\"model_type\": \"roberta\", \"architectures\": [\"RobertaForMaskedLM\"], "
               "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
               "\"intermediate_size\": 128, \"vocab_size\": 200, \"max_position_embeddings\": 64, "
               "\"type_vocab_size\": 1, \"pad_token_id\": 1}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    printf("post-LN config over pre-LN weights: %s\n", err.msg);
    assert_non_null(strstr(err.msg, "LayerNorm"));
    posemb_config c;
    posemb_config_defaults(&c, POSEMB_GPT2);
    c.pre_ln = 1;
    assert_int_equal(posemb_config_check(&c, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "pre_ln is an encoder's"));
}

/* Malformed folders: one message, naming what is wrong. */
static void test_bad_checkpoints(void **state)
{
    posemb_model *m = small(POSEMB_BERT, "ape", POSEMB_HEAD_NONE, 0), *out;
    char path[1200], cmd[1400];
    posemb_error err;
    snprintf(path, sizeof path, "%s/bad", dir);
    assert_int_equal(posemb_model_save(m, path, &err), POSEMB_OK);
    /* a config that says 3 layers over a 2-layer file */
    write_text("bad/config.json", "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 3, "
                                  "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 200, "
                                  "\"max_position_embeddings\": 64}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "'encoder.layer.2.attention.self.query.weight' is missing"));
    /* one layer: the file's second layer does not belong */
    write_text("bad/config.json", "{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
                                  "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 200, "
                                  "\"max_position_embeddings\": 64}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    assert_non_null(strstr(err.msg, "encoder.layer.1."));
    /* a wrong width */
    write_text("bad/config.json", "{\"model_type\": \"bert\", \"hidden_size\": 32, \"num_hidden_layers\": 2, "
                                  "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 200, "
                                  "\"max_position_embeddings\": 64}");
    assert_int_equal(posemb_model_load(&out, path, &err), POSEMB_EFORMAT);
    assert_non_null(
        strstr(err.msg, "embeddings.word_embeddings.weight' is F32 [200, 64], config.json implies F32 [200, 32]"));
    const char *configs[][2] = {
        {"{\"model_type\": \"t5\"}", "model_type \"t5\" is not supported"},
        {"{\"hidden_size\": 64}", "no \"model_type\""},
        {"[1, 2]", "not a JSON object"},
        {"{\"model_type\": \"bert\", \"hidden_size\": -4}", "\"hidden_size\" must be an integer"},
        {"{\"model_type\": \"bert\", \"hidden_size\": 64, \"num_attention_heads\": 5}", "not a multiple of 5 heads"},
        {"{\"model_type\": \"bert\", \"hidden_act\": \"swish\"}", "activation \"swish\" is not supported"},
        {"{\"model_type\": \"bert\", \"position_embedding_type\": \"rotary\"}", "position_embedding_type \"rotary\""},
        {"{\"model_type\": \"gpt2\", \"scale_attn_by_inverse_layer_idx\": true}", "is not supported"},
        {"{\"model_type\": \"bert\", \"architectures\": [\"BertForNextSentencePrediction\"]}", "not supported"},
        {"{\"model_type\": \"bert\", \"posemb_pe\": \"rpe:k=0\"}", "rpe option k=0 is outside"},
        {"{\"model_type\": \"bert\",", "not a JSON object"},
    };
    for (int i = 0; i < 11; i++) {
        write_text("bad/config.json", configs[i][0]);
        if (posemb_model_load(&out, path, &err) == POSEMB_OK || !strstr(err.msg, configs[i][1]) ||
            !strstr(err.msg, "config.json"))
            fail_msg("config %s: %s", configs[i][0], err.msg);
    }
    /* the command line: a sequence longer than the APE table */
    assert_int_equal(posemb_model_save(m, path, &err), POSEMB_OK);
    char ids[4096] = "{\"input_ids\": [[";
    for (int t = 0; t < 70; t++) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s5", t ? "," : "");
    strcat(ids, "]]}");
    write_text("long.json", ids);
    snprintf(cmd, sizeof cmd, "'%s' forward %s --inputs %s/long.json --out %s/o.safetensors", POSEMB_BIN, path, dir,
             dir);
    char out_text[2048];
    assert_int_equal(tu_run(cmd, out_text, sizeof out_text), 1);
    assert_non_null(strstr(out_text, "70 tokens are too many: PE ape: position 64 (token 64) is past ape's table of 64 "
                                     "positions (max_position_embeddings 64)"));
    write_text("badids.json", "{\"input_ids\": [[1, 2, 999]]}");
    snprintf(cmd, sizeof cmd, "'%s' forward %s --inputs %s/badids.json --out %s/o.safetensors", POSEMB_BIN, path, dir,
             dir);
    assert_int_equal(tu_run(cmd, out_text, sizeof out_text), 1);
    assert_non_null(strstr(out_text, "token id 999 at [0, 2] is outside the vocabulary (200)"));
    write_text("ragged.json", "{\"input_ids\": [[1, 2, 3], [1, 2]]}");
    snprintf(cmd, sizeof cmd, "'%s' forward %s --inputs %s/ragged.json --out %s/o.safetensors", POSEMB_BIN, path, dir,
             dir);
    assert_int_equal(tu_run(cmd, out_text, sizeof out_text), 1);
    assert_non_null(strstr(out_text, "\"input_ids\"[1] must be a list of 3 integers"));
    /* a key posemb does not read is an error naming the file and the key, not ignored */
    write_text("labels.json", "{\"input_ids\": [[1, 2, 3]], \"labels\": [[1, 2, 3]]}");
    snprintf(cmd, sizeof cmd, "'%s' forward %s --inputs %s/labels.json --out %s/o.safetensors", POSEMB_BIN, path, dir,
             dir);
    assert_int_equal(tu_run(cmd, out_text, sizeof out_text), 1);
    assert_non_null(strstr(out_text, "labels.json: unknown key \"labels\""));
    /* position_ids reach the model: the CLI's hidden states are the library's with those positions (an APE's
     * rows 10..12, not 0..2), and a '_' key is a comment */
    write_text("pos.json", "{\"input_ids\": [[5, 6, 7]], \"position_ids\": [[10, 11, 12]], \"_note\": \"x\"}");
    snprintf(cmd, sizeof cmd, "'%s' forward %s --inputs %s/pos.json --out %s/o.safetensors", POSEMB_BIN, path, dir,
             dir);
    if (tu_run(cmd, out_text, sizeof out_text)) fail_msg("%s", out_text);
    int32_t pids[3] = {5, 6, 7}, pos[3] = {10, 11, 12};
    posemb_batch b = {.B = 1, .T = 3, .ids = pids, .positions = pos};
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
    posemb_st_file f;
    snprintf(path, sizeof path, "%s/o.safetensors", dir);
    assert_int_equal(posemb_st_open(&f, path, &err), POSEMB_OK);
    int64_t n;
    float *got[3];
    for (int i = 0; i <= 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "hidden_states.%d", i);
        got[i] = tu_st_read(&f, name, &n);
        assert_int_equal(n, 3 * 64);
        assert_memory_equal(got[i], posemb_model_hidden(m, i), sizeof(float) * 3 * 64);
    }
    posemb_st_close(&f);
    b.positions = NULL; /* positions 0..2: other embeddings */
    assert_int_equal(posemb_model_forward(m, &b, &err), POSEMB_OK);
    assert_memory_not_equal(got[0], posemb_model_hidden(m, 0), sizeof(float) * 64);
    for (int i = 0; i <= 2; i++) free(got[i]);
    posemb_model_free(m);
}

/* posemb_config_override sets config.json keys as a saved, edited and
 * reloaded config.json would: a tied Llama has no lm_head; keys a decoder
 * does not take, values it refuses and non-objects fail, c unchanged. */
static void test_config_override(void **state)
{
    posemb_config c, before;
    posemb_error err;
    posemb_config_defaults(&c, POSEMB_LLAMA);
    c.vocab_size = 256, c.hidden = 32, c.layers = 2, c.heads = 4, c.kv_heads = 4, c.intermediate = 64;
    if (posemb_config_set_head(&c, POSEMB_HEAD_CLM, 0, &err)) fail_msg("%s", err.msg);
    assert_int_equal(c.tie_embeddings, 0);
    c.hidden_dropout = 0.125f; /* posemb's own for Llama: kept, though config.json has no key for it */
    if (posemb_config_override(&c, "{\"tie_word_embeddings\": true, \"mlp_bias\": true, \"rms_norm_eps\": 1e-5}", "t",
                               &err))
        fail_msg("%s", err.msg);
    assert_int_equal(c.tie_embeddings, 1);
    assert_int_equal(c.mlp_bias, 1);
    assert_true(c.hidden_dropout == 0.125f);
    assert_float_equal(c.ln_eps, 1e-5, 1e-12);
    assert_int_equal(c.hidden, 32);
    assert_int_equal(c.head, POSEMB_HEAD_CLM);
    posemb_model *m;
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s", err.msg);
    assert_null(posemb_model_find(m, "lm_head.weight"));
    assert_non_null(posemb_model_find(m, "layers.0.mlp.down_proj.bias"));
    posemb_model_free(m);
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"{\"bogus\": 1}", "t: \"bogus\" is not a setting posemb's llama config takes"},
        {"{\"tie_word_embeddings\": 1}", "t: \"tie_word_embeddings\" is not a setting"},
        {"{\"vocab_size\": 0}", "t: "}, /* out of range: refused as in a config.json */
        {"[1]", "t: not a JSON object of config.json keys"},
        {"{", "t: not a JSON object of config.json keys"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        before = c;
        assert_int_not_equal(posemb_config_override(&c, bad[i].json, "t", &err), POSEMB_OK);
        assert_non_null(strstr(err.msg, bad[i].msg));
        assert_memory_equal(&c, &before, sizeof c);
    }
    snprintf(c.pe, sizeof c.pe, "rope:scaling=longrope,factors=f.json");
    assert_int_equal(posemb_config_override(&c, "{\"mlp_bias\": false}", "t", &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "t: a PE with factors= (longrope) cannot take config.json keys"));
    posemb_config_defaults(&c, POSEMB_GPT2);
    assert_int_equal(posemb_config_override(&c, "{\"rms_norm_eps\": 1e-5}", "g", &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "g: \"rms_norm_eps\" is not a setting posemb's gpt2 config takes"));
    assert_int_equal(posemb_config_override(&c, "{\"tie_word_embeddings\": \"no\"}", "g", &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "g: \"tie_word_embeddings\" must be true or false"));
}

/* GPT-2 with tie_word_embeddings false (HF's GPT2LMHeadModel then keeps its
 * own lm_head.weight) saves that tensor and loads back untied, the same
 * weights; tied, the file has no lm_head. */
static void test_gpt2_untied(void **state)
{
    posemb_model *m = small(POSEMB_GPT2, "ape", POSEMB_HEAD_CLM, 0), *back;
    assert_null(posemb_model_find(m, "lm_head.weight"));
    posemb_config c = *posemb_model_config(m);
    posemb_model_free(m);
    posemb_error err;
    if (posemb_config_override(&c, "{\"tie_word_embeddings\": false}", "g", &err)) fail_msg("%s", err.msg);
    if (posemb_model_create(&m, &c, &err)) fail_msg("%s", err.msg);
    posemb_model_init(m, 5);
    const posemb_param *head = posemb_model_find(m, "lm_head.weight");
    assert_non_null(head);
    assert_true(head->shape[0] == c.vocab_size && head->shape[1] == c.hidden);
    char path[1200];
    snprintf(path, sizeof path, "%s/untied", dir);
    if (posemb_model_save(m, path, &err) || posemb_model_load(&back, path, &err)) fail_msg("%s", err.msg);
    assert_int_equal(posemb_model_config(back)->tie_embeddings, 0);
    assert_non_null(posemb_model_find(back, "lm_head.weight"));
    assert_int_equal(posemb_model_n_floats(back), posemb_model_n_floats(m));
    assert_memory_equal(posemb_model_weights(back), posemb_model_weights(m), posemb_model_n_floats(m) * sizeof(float));
    posemb_model_free(back);
    posemb_model_free(m);
}

/* c written to dir/NAME/config.json and read back into *back; the file's text into text. */
static void save_load(const posemb_config *c, const char *name, posemb_config *back, char *text, size_t cap)
{
    char path[1200];
    posemb_error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/config.json", dir, name);
    if (posemb_config_save(c, path, &err)) fail_msg("%s: save: %s", c->pe, err.msg);
    if (posemb_config_load(back, path, &err)) fail_msg("%s: load: %s", c->pe, err.msg);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, cap - 1, f);
    text[n] = '\0';
    fclose(f);
}

/* load -> save -> load gives the same config, for one spec on every
 * architecture that takes it (decoder-only PEs on GPT-2 and Llama). */
static void round_trip_spec(const char *spec)
{
    static const posemb_arch archs[] = {POSEMB_BERT, POSEMB_GPT2, POSEMB_LLAMA};
    posemb_error err;
    int taken = 0;
    for (int a = 0; a < 3; a++) {
        posemb_config c, first, second;
        posemb_config_defaults(&c, archs[a]);
        c.vocab_size = 50;
        c.hidden = 16;
        c.layers = 2;
        c.heads = 2;
        c.intermediate = 32;
        c.max_position = 1024;
        if (archs[a] == POSEMB_LLAMA) c.kv_heads = 2;
        snprintf(c.pe, sizeof c.pe, "%s", spec);
        if (posemb_config_check(&c, &err)) continue; /* an encoder for a decoder-only PE */
        static char t1[1 << 16], t2[1 << 16];
        save_load(&c, "rt1", &first, t1, sizeof t1);
        save_load(&first, "rt2", &second, t2, sizeof t2);
        if (memcmp(&first, &second, sizeof first) || strcmp(t1, t2))
            fail_msg("%s: load -> save -> load changes the config (%s / %s)", spec, first.pe, second.pe);
        taken++;
    }
    if (!taken) fail_msg("%s: no architecture takes it: %s", spec, err.msg);
}

/* What posemb_config_load accepts, posemb_config_save writes: an option a
 * PE does not have is refused at load (naming the option and the PE), and
 * every spec of the catalogue makes the round trip. */
static void test_config_specs_round_trip(void **state)
{
    (void)state;
    char path[1200];
    posemb_config c;
    posemb_error err;
    snprintf(path, sizeof path, "%s/bad", dir);
    mkdir(path, 0755);
    write_text("bad/config.json", "{\"model_type\": \"bert\", \"posemb_pe\": \"rpe:factors=k=2\"}");
    snprintf(path, sizeof path, "%s/bad/config.json", dir);
    assert_int_equal(posemb_config_load(&c, path, &err), POSEMB_EFORMAT);
    printf("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "config.json: spec 'rpe:factors=")); /* the path resolved in the folder */
    assert_non_null(strstr(err.msg, "rpe has no option 'factors'"));
    assert_null(strchr(err.msg, '\n'));
    posemb_config_defaults(&c, POSEMB_BERT);
    snprintf(c.pe, sizeof c.pe, "rpe:factors=k=2");
    assert_int_equal(posemb_config_check(&c, &err), POSEMB_EINVAL);
    snprintf(c.pe, sizeof c.pe, "rope:factors=x.json"); /* a rope option, of another scaling */
    assert_int_equal(posemb_config_check(&c, &err), POSEMB_EINVAL);
    assert_non_null(strstr(err.msg, "factors needs scaling=longrope"));
    int n = 0;
    for (int i = 0; i < posemb_pe_family_count(); i++) {
        posemb_pe_family_doc doc = posemb_pe_family_doc_at(i);
        round_trip_spec(doc.positions_only ? "rope+random:max=1024" : doc.name);
        n++;
    }
    /* the combinations `posemb pe --list` names, and options of every kind */
    static const char *const specs[] = {"ape+rpe",
                                        "lsin+lsrpe",
                                        "ape+alibi",
                                        "ape+random:max=256",
                                        "rope+random:max=1024",
                                        "rpe:k=8,values=off,init_std=0.05",
                                        "lsin+lsrpe:k=4",
                                        "sin:layout=halves,scale=0.5",
                                        "ape:integration=concat,width=8",
                                        "rope:base=500000,pairing=interleaved",
                                        "rope:scaling=linear,factor=2",
                                        "rope:scaling=dynamic,factor=2",
                                        "rope:scaling=yarn,factor=4,original=64,beta_fast=16",
                                        "rope:scaling=llama3,factor=8,original=64,low_freq_factor=2",
                                        "rope:p=0.5",
                                        "rope:layers=0",
                                        "t5:buckets=16,max_distance=32",
                                        "alibi:sides=mirror",
                                        "kerple:kind=power",
                                        "fire:width=8,threshold=64",
                                        "cope:npos=8",
                                        "fox:bias=2",
                                        "xpos:scale_base=256",
                                        "sandwich:dim=4"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) round_trip_spec(specs[i]);
    printf("%d catalogue families and %zu specs: load -> save -> load unchanged\n", n, sizeof specs / sizeof *specs);
}

/* config_take_opt, which the Llama 4 and SmolLM3 writers use to see whether
 * a spec is what HF's keys say: an option is found first or later, its
 * value compared, and the spec left well formed. */
static void test_take_opt(void **state)
{
    (void)state;
    static const struct {
        const char *spec, *key, *value, *left;
        int found;
    } cases[] = {
        {"rope:layers=0-2", "layers", "0-2", "rope", 1},
        {"rope:layers=0-2,base=500000", "layers", "0-2", "rope:base=500000", 1},
        {"rope:base=1,layers=0-2", "layers", "0-2", "rope:base=1", 1},
        {"rope:base=1,layers=0-2,p=0.5", "layers", NULL, "rope:base=1,p=0.5", 1},
        {"rope:layers=0-1,base=1", "layers", "0-2", "rope:base=1", 0}, /* another value: removed, not found */
        {"rope:layers=0-2+temperature:layers=3", "layers", "0-2", "rope+temperature:layers=3", 1},
        {"rope:layers=0-2|3", "layers", "0-2", "rope", 0},                      /* a longer value is another */
        {"rope:local_layers=0-2", "layers", "0-2", "rope:local_layers=0-2", 0}, /* another key ending alike */
        {"rope:base=1", "layers", "0-2", "rope:base=1", 0},
        {"rope", "layers", "0-2", "rope", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char spec[128];
        snprintf(spec, sizeof spec, "%s", cases[i].spec);
        int found = config_take_opt(spec, cases[i].key, cases[i].value);
        if (found != cases[i].found || strcmp(spec, cases[i].left))
            fail_msg("%s without %s: %d '%s', want %d '%s'", cases[i].spec, cases[i].key, found, spec, cases[i].found,
                     cases[i].left);
    }
}

/* The text of key's value in a saved config.json (after the ':' and the
 * blanks cJSON lays out), up to the next ',', '\n' or '}'. */
static const char *json_value(const char *text, const char *key, char *out, size_t cap)
{
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\":", key);
    const char *p = strstr(text, quoted);
    if (!p) fail_msg("no key %s in %s", key, text);
    p += strlen(quoted);
    p += strspn(p, " \t");
    size_t n = strcspn(p, ",\n}");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return out;
}

/* config.json's float fields are written as floats (2.0, not 2), as HF
 * writes them, and load back unchanged. */
static void test_config_floats(void **state)
{
    (void)state;
    static const struct {
        posemb_arch arch;
        const char *pe, *key, *want;
    } cases[] = {
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "factor", "2.0"},
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "rope_theta", "500000.0"},
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "rms_norm_eps", "1e-06"},
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "attention_dropout", "0.0"},
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "initializer_range", "0.02"},
        {POSEMB_LLAMA, "rope:base=500000,scaling=linear,factor=2", "max_position_embeddings", "64"},
        {POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=16,beta_fast=32", "factor", "4.0"},
        {POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=16,beta_fast=32", "beta_fast", "32.0"},
        {POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=16,beta_fast=32", "original_max_position_embeddings", "16"},
        {POSEMB_LLAMA, "rope:scaling=llama3,factor=8,original=16,low_freq_factor=1", "low_freq_factor", "1.0"},
        {POSEMB_LLAMA, "rope:scaling=dynamic,factor=2", "factor", "2.0"},
        {POSEMB_LLAMA, "rope:scaling=dynamic,factor=2", "rope_scaling", "{"},
        {POSEMB_LLAMA, "rope:scaling=yarn,factor=4,original=16,beta_fast=32", "rope_type", "\"yarn\""},
        {POSEMB_BERT, "ape", "layer_norm_eps", "1e-12"},
        {POSEMB_BERT, "ape", "hidden_dropout_prob", "0.1"},
        {POSEMB_BERT, "ape", "initializer_range", "0.02"},
        {POSEMB_BERT, "ape", "hidden_size", "64"},
        {POSEMB_GPT2, "alibi", "layer_norm_epsilon", "1e-05"},
        {POSEMB_GPT2, "alibi", "attn_pdrop", "0.1"},
    };
    static char text[1 << 16];
    char got[64];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        posemb_model *m = small(cases[i].arch, cases[i].pe, POSEMB_HEAD_NONE, 0);
        posemb_config back;
        save_load(posemb_model_config(m), "floats", &back, text, sizeof text);
        if (strcmp(json_value(text, cases[i].key, got, sizeof got), cases[i].want))
            fail_msg("%s: \"%s\": %s, want %s", cases[i].pe, cases[i].key, got, cases[i].want);
        assert_memory_equal(&back, posemb_model_config(m), sizeof back);
        posemb_model_free(m);
    }
    /* linear and dynamic as transformers before 4.43 require them: rope_scaling is exactly
     * {"type", "factor"}, the factor a float */
    const char *legacy[] = {"rope:base=20000,scaling=linear,factor=2", "rope:scaling=dynamic,factor=2"};
    for (int i = 0; i < 2; i++) {
        posemb_model *m = small(POSEMB_LLAMA, legacy[i], POSEMB_HEAD_NONE, 0);
        posemb_config back;
        save_load(posemb_model_config(m), "floats", &back, text, sizeof text);
        cJSON *j = cJSON_Parse(text), *rs = cJSON_GetObjectItem(j, "rope_scaling");
        assert_int_equal(cJSON_GetArraySize(rs), 2);
        assert_string_equal(cJSON_GetObjectItem(rs, "type")->valuestring, i ? "dynamic" : "linear");
        assert_non_null(strstr(text, "\"factor\":\t2.0"));
        cJSON_Delete(j);
        posemb_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_layout),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_pre_ln_folders),
        cmocka_unit_test(test_longrope_folder),
        cmocka_unit_test(test_llama_head_dim),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_init_report),
        cmocka_unit_test(test_llama_rope_scaling_for_hf),
        cmocka_unit_test(test_half_precision),
        cmocka_unit_test(test_bad_checkpoints),
        cmocka_unit_test(test_config_override),
        cmocka_unit_test(test_gpt2_untied),
        cmocka_unit_test(test_config_specs_round_trip),
        cmocka_unit_test(test_config_floats),
        cmocka_unit_test(test_take_opt),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
