#include "tokfiles.h"

#include <stdio.h>
#include <sys/stat.h>

static int exists(const char *dir, const char *name, char *path)
{
    struct stat sb;
    return dir && !posemb_path_join(path, POSEMB_PATH_MAX, dir, name) && stat(path, &sb) == 0;
}

int cli_tok_files_find(const char *dir, char (*buf)[POSEMB_PATH_MAX], cli_tok_files *f)
{
    *f = (cli_tok_files){0};
    if (exists(dir, "tokenizer.json", buf[0])) f->json = buf[0];
    else if (exists(dir, "vocab.txt", buf[0])) f->vocab = buf[0];
    else if (exists(dir, "vocab.json", buf[0]) && exists(dir, "merges.txt", buf[1])) {
        f->vocab = buf[0];
        f->merges = buf[1];
    }
    return f->json || f->vocab;
}

posemb_status cli_tok_files_load(const cli_tok_files *f, posemb_tokenizer **tok, char *desc, size_t cap,
                                 posemb_error *err)
{
    snprintf(desc, cap, "%s%s%s", f->json ? f->json : f->vocab, f->merges ? " " : "", f->merges ? f->merges : "");
    if (f->json) return posemb_tokenizer_load_json(f->json, tok, err);
    if (f->merges) return posemb_tokenizer_load_bpe(f->vocab, f->merges, tok, err);
    return posemb_tokenizer_load_wordpiece(f->vocab, 1, tok, err);
}

posemb_status cli_tok_files_folder(const char *dir, posemb_tokenizer **tok, char *desc, size_t cap, posemb_error *err)
{
    char buf[2][POSEMB_PATH_MAX];
    cli_tok_files f;
    if (!cli_tok_files_find(dir, buf, &f))
        return posemb_fail(err, POSEMB_EINVAL, "%s: no tokenizer.json, vocab.txt or vocab.json + merges.txt", dir);
    return cli_tok_files_load(&f, tok, desc, cap, err);
}
