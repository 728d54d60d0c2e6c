/* Build a position embedding from its spec and print its primary matrix as CSV.
 *
 *   cc pe_table.c $(pkg-config --cflags --libs posemb) -o pe_table
 *   ./pe_table sin 16 8          # spec, positions, width
 *   ./pe_table alibi 8 64 4      # ... and heads: bias.head0 [8 x 8]
 */
#include <stdio.h>
#include <stdlib.h>

#include <posemb/posemb.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s SPEC POSITIONS WIDTH [HEADS]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[2]);
    posemb_pe_dims dims = {.dim = atoi(argv[3]),
                           .n_heads = argc > 4 ? atoi(argv[4]) : 1,
                           .n_layers = 1,
                           .max_len = n,
                           .causal = 0,
                           .max_threads = 1};
    posemb_error err;
    posemb_pe_tables *t;
    if (posemb_pe_tables_new(&t, argv[1], &dims, n, 0, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    const posemb_pe_export *ex = posemb_pe_tables_export(t);
    if (ex->n == 0) {
        printf("%s adds no position information\n", posemb_pe_spec(posemb_pe_tables_pe(t)));
    } else {
        const posemb_pe_named_matrix *m = &ex->items[0];
        printf("# %s: %s [%d x %d], %s\n", posemb_pe_spec(posemb_pe_tables_pe(t)), m->name, m->rows, m->cols, m->desc);
        for (int i = 0; i < m->rows; i++)
            for (int j = 0; j < m->cols; j++)
                printf("%.9g%c", m->data[(size_t)i * m->cols + j], j + 1 < m->cols ? ',' : '\n');
    }
    posemb_pe_tables_free(t);
    return 0;
}
