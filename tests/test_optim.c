/* AdamW, the schedule and clipping against torch 1.13: torch.optim.AdamW
 * (weight decay 0.01 on the first two floats, none on the others),
 * torch.nn.utils.clip_grad_norm_(max_norm=1) and a LambdaLR with HF's
 * linear warm-up (2 steps) and decay (to 0 at step 5), lr 0.1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "posemb/optim.h"
#include "posemb/rng.h"
#include "posemb/threads.h"
#include "testutil.h"
#include "core/rng_internal.h"
#include "train/optim_internal.h"

static void test_against_torch(void **state)
{
    const float grads[4][4] = {{0.3f, -0.2f, 0.1f, 0.05f},
                               {2.0f, 1.0f, -3.0f, 0.5f},
                               {-0.1f, 0.4f, 0.2f, -0.3f},
                               {0.05f, 0.05f, 0.05f, 0.05f}};
    const double want[4][4] = {{0.5, -1.0, 2.0, 0.25},
                               {0.4508676826953888, -1.009019136428833, 2.0327353477478027, 0.2033616453409195},
                               {0.3862045109272003, -1.0665777921676636, 2.066352605819702, 0.23038062453269958},
                               {0.3478633165359497, -1.1014153957366943, 2.0823326110839844, 0.2391929179430008}};
    const double norms[4] = {0.3774917423725128, 3.7749173641204834, 0.547722578048706, 0.10000000149011612};
    posemb_adamw o;
    posemb_error err;
    assert_int_equal(posemb_adamw_init_n(&o, 4, &err), POSEMB_OK);
    o.decay[0] = o.decay[1] = 1;
    posemb_adamw_config c = posemb_adamw_defaults(0.1f, 2, 5);
    float w[4] = {0.5f, -1.0f, 2.0f, 0.25f};
    for (int s = 0; s < 4; s++) {
        double n = posemb_adamw_update(&o, w, grads[s], &c);
        TU_CLOSE(n, norms[s], 1e-6, 1e-6, "grad norm", s);
        for (int i = 0; i < 4; i++) TU_CLOSE(w[i], want[s][i], 1e-6, 1e-6, "weights", s * 4 + i);
    }
    posemb_adamw_free(&o);
}

static void test_schedule(void **state)
{
    posemb_adamw_config c = posemb_adamw_defaults(1.0f, 10, 110);
    const long steps[] = {0, 5, 10, 60, 109, 110, 500};
    const double want[] = {0.0, 0.5, 1.0, 0.5, 0.01, 0.0, 0.0};
    for (int i = 0; i < 7; i++) TU_CLOSE(posemb_lr_at(&c, steps[i]), want[i], 1e-6, 0, "lr", i);
}

/* The gradient norm has the same bits on any thread count (the ranks of a
 * group may run different counts and must clip alike), and is the norm. */
static void test_norm_threads(void **state)
{
    enum { N = 100003 };
    static float g[N];
    posemb_rng r;
    posemb_rng_seed(&r, 3, 3);
    double ref = 0;
    for (int i = 0; i < N; i++) {
        g[i] = (float)(posemb_rng_uniform(&r) - 0.5);
        ref += (double)g[i] * g[i];
    }
    double norm[4];
    const int threads[4] = {1, 2, 3, 7};
    for (int k = 0; k < 4; k++) {
        posemb_threads_set(threads[k]);
        norm[k] = posemb_grad_norm(g, N);
    }
    posemb_threads_set(0);
    for (int k = 1; k < 4; k++) assert_memory_equal(&norm[k], &norm[0], sizeof *norm);
    TU_CLOSE(norm[0], sqrt(ref), 0, 1e-12, "norm", 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_torch), cmocka_unit_test(test_schedule),
                                       cmocka_unit_test(test_norm_threads)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
