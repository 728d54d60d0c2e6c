/* posemb's whole public API in one include: position embeddings (pe.h), the
 * Transformer engine (nn.h, attention.h, model.h), data (tokenizer.h,
 * safetensors.h, corpus.h), training (optim.h, trainer.h) and analysis
 * (analyze.h, probes.h, indicators.h, analysis.h). The studies, their
 * datasets (GLUE, SQuAD) and statistics, the figures and the HTML reports are
 * the CLI's (`posemb study`, `plot`, `analyze`), not the library's: their
 * headers are internal (src/) and not installed.
 * Link with `pkg-config --cflags --libs posemb`.
 *
 * Conventions: every public symbol starts with posemb_ (macros POSEMB_).
 * Fallible functions return a posemb_status (POSEMB_OK = 0) and fill a
 * posemb_error with a one-line message when given one; objects made by a
 * *_new, *_create, *_load or *_open function belong to the caller, who
 * releases them with the matching *_free or *_close. */
#ifndef POSEMB_POSEMB_H
#define POSEMB_POSEMB_H

#include "posemb/version.h"
#include "posemb/api.h"
#include "posemb/error.h"
#include "posemb/arena.h"
#include "posemb/rng.h"
#include "posemb/tensor.h"
#include "posemb/threads.h"
#include "posemb/pe.h"
#include "posemb/nn.h"
#include "posemb/attention.h"
#include "posemb/precision.h"
#include "posemb/blas.h"
#include "posemb/safetensors.h"
#include "posemb/tokenizer.h"
#include "posemb/model.h"
#include "posemb/optim.h"
#include "posemb/trainer.h"
#include "posemb/corpus.h"
#include "posemb/indicators.h"
#include "posemb/probes.h"
#include "posemb/analyze.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* sizeof the public struct named type ("posemb_config", "posemb_analyze_opts",
 * ...) in the library a program runs with, 0 for a name it does not know:
 * a binding that mirrors a struct (python/posemb) checks its layout against
 * it, so that a library of another version fails at once, not in memory. */
POSEMB_API size_t posemb_struct_size(const char *type);

#ifdef __cplusplus
}
#endif

#endif
