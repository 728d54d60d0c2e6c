/* The masked windows posemb_order_cost reads, shared with its tests, which
 * score a window from the model's logits themselves (a second method). */
#ifndef POSEMB_ANALYSIS_ORDER_IMPL_H
#define POSEMB_ANALYSIS_ORDER_IMPL_H

#include "posemb/probes.h"

typedef struct order_windows {
    int B, T;
    int32_t *input;  /* [B, T] [CLS] tokens [SEP], the masked tokens [MASK] */
    int32_t *target; /* [B, T] the token at a masked place, -100 elsewhere */
    int32_t *perm;   /* [B, T] place j of a shuffled window holds place perm[j] (0 and T - 1 stay) */
    long masked;
} order_windows;

/* Draws o->windows windows of tokens[0..n) as posemb_order_cost does, with
 * o's special ids (none may be -1). EINVAL for options out of range or n
 * below one window, ERANGE for n past 2^32, ENOMEM; on failure w holds
 * nothing. Free w with order_windows_free. */
posemb_status order_draw(const int32_t *tokens, long n, const posemb_order_opts *o, order_windows *w,
                         posemb_error *err);
void order_windows_free(order_windows *w);

#endif
