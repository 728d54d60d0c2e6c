/* Load a Hugging Face model folder (BERT, RoBERTa, GPT-2: config.json +
 * model.safetensors) and run one forward pass on the token ids given.
 *
 *   cc forward.c $(pkg-config --cflags --libs posemb) -o forward
 *   ./forward path/to/model 101 7592 2088 102
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <posemb/posemb.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR ID...\n", argv[0]);
        return 2;
    }
    int T = argc - 2;
    int32_t *ids = malloc((size_t)T * sizeof *ids);
    if (!ids) return 1;
    for (int t = 0; t < T; t++) ids[t] = (int32_t)atoi(argv[2 + t]);
    posemb_error err;
    posemb_model *m;
    int rc = 0;
    if (posemb_model_load(&m, argv[1], &err)) {
        fprintf(stderr, "%s\n", err.msg);
        free(ids);
        return 1;
    }
    const posemb_config *c = posemb_model_config(m);
    posemb_batch batch = {.B = 1, .T = T, .ids = ids, .types = NULL, .mask = NULL};
    if (posemb_model_forward(m, &batch, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        rc = 1;
    } else {
        const float *h = posemb_model_last_hidden(m);
        printf("%s, PE %s: last_hidden_state [1, %d, %d]\n", c->architecture, posemb_pe_spec(posemb_model_pe(m)), T,
               c->hidden);
        for (int t = 0; t < T; t++)
            printf("  token %d (id %d): %.6f %.6f %.6f ...\n", t, ids[t], h[(size_t)t * c->hidden],
                   h[(size_t)t * c->hidden + 1], h[(size_t)t * c->hidden + 2]);
    }
    posemb_model_free(m);
    free(ids);
    return rc;
}
