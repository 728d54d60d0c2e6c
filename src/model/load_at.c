/* A decoder checkpoint built to take a longer context than it was trained
 * at, for the PEs that have no table of positions (posemb_lm_load_at). */
#include "posemb/model.h"
#include "model/model_internal.h"

/* The checkpoint in dir under cfg; every tensor of the model must come from it. */
static posemb_status model_for(const char *dir, const posemb_config *cfg, posemb_model **m, posemb_error *err)
{
    int missing = 0;
    posemb_status st = posemb_model_create(m, cfg, err);
    if (!st) st = posemb_model_init_from(*m, dir, &missing, err);
    if (!st && missing)
        st = posemb_fail(err, POSEMB_EINVAL, "%s: the checkpoint has no tensors for %d of the model's (PE %s)", dir,
                         missing, cfg->pe);
    if (st) {
        posemb_model_free(*m);
        *m = NULL;
    }
    return st;
}

posemb_status posemb_lm_load_at(const char *dir, const posemb_config *cfg, int L, posemb_model **m, int *context,
                                posemb_error *err)
{
    posemb_config c = *cfg;
    *m = NULL;
    *context = L < cfg->max_position ? L : cfg->max_position;
    if (L > cfg->max_position) {
        c.max_position = L; /* PEs without tables of positions take any length */
        posemb_error quiet;
        if (!model_for(dir, &c, m, &quiet)) {
            *context = L;
            return POSEMB_OK;
        }
        c.max_position = cfg->max_position; /* a table sized by max_position: it takes no more */
    }
    return model_for(dir, &c, m, err);
}
