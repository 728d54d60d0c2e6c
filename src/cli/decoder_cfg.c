#include "decoder_cfg.h"

#include <stdio.h>

#include "core/fileio.h"

posemb_status cli_decoder_config(const char *dir, const char *pe, posemb_config *cfg, posemb_error *err)
{
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, dir, "config.json"))
        return posemb_fail(err, POSEMB_EINVAL, "%s: path too long", dir);
    posemb_status st = posemb_config_load(cfg, path, err);
    if (!st && cfg->arch != POSEMB_GPT2 && cfg->arch != POSEMB_LLAMA && cfg->arch != POSEMB_NEOX)
        st = posemb_fail(err, POSEMB_EINVAL, "%s: a %s is not a decoder (GPT-2, Llama or GPT-NeoX)", dir,
                         cfg->architecture);
    if (!st && posemb_config_set_head(cfg, POSEMB_HEAD_CLM, 0, err)) st = err->code;
    if (!st && pe) snprintf(cfg->pe, sizeof cfg->pe, "%s", pe);
    return st;
}
