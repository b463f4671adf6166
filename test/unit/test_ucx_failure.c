/*
 * test_ucx_failure.c: the UCX glue fails cleanly, each time at the earliest point, with one line
 * naming the failing UCX call and nothing printed by UCX itself:
 *   - UCX_TLS=nonexistent_transport: nvf_ucx_ctx_acquire fails (in ucp_init), leaves nothing
 *     behind, fails again the same way, and works once the variable is gone;
 *   - UCX_PROTO_ENABLE=y where UCX's fence is weak (1.13) is refused at acquire;
 *   - UCX_TLS=self between two processes (no transport reaches the peer): the context and mesh
 *     are created, nvf_ucx_mesh_connect fails in ucp_ep_create, teardown is clean;
 *   - bad mesh parameters and bad or mismatched blobs are refused (NVF_ERR_INVALID);
 *   - under UCX_TLS=tcp a peer that dies is detected: the mesh reports failure, sends fail,
 *     and destroy and release finish in bounded time.
 * Every case runs in forked processes, so its environment stays its own.
 */
#include "nvf_test.h"
#include "nvf_test_ucx.h"

#include <sched.h>
#include <string.h>

/* Captures what this process writes to stdout and stderr between begin and end. */
typedef struct quiet {
    int saved_out, saved_err;
    FILE *tmp;
} quiet_t;

static void quiet_begin(quiet_t *q)
{
    fflush(stdout);
    fflush(stderr);
    q->tmp = tmpfile();
    q->saved_out = dup(1);
    q->saved_err = dup(2);
    if (q->tmp != NULL) {
        dup2(fileno(q->tmp), 1);
        dup2(fileno(q->tmp), 2);
    }
}

/* Returns what was printed (static buffer, possibly empty). */
static const char *quiet_end(quiet_t *q)
{
    static char out[1024];
    fflush(stdout);
    fflush(stderr);
    dup2(q->saved_out, 1);
    dup2(q->saved_err, 2);
    close(q->saved_out);
    close(q->saved_err);
    out[0] = '\0';
    if (q->tmp != NULL) {
        rewind(q->tmp);
        size_t n = fread(out, 1, sizeof(out) - 1, q->tmp);
        out[n] = '\0';
        fclose(q->tmp);
    }
    return out;
}

static void reset_checks(void)
{
    nvf_test_failures = 0;
    nvf_test_checks = 0;
}

static int bad_tls_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_TLS", "nonexistent_transport", 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        nvf_ucx_ctx_t *ctx = (nvf_ucx_ctx_t *)&ctx; /* must be cleared */
        quiet_t q;
        quiet_begin(&q);
        nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
        const char *printed = quiet_end(&q);
        CHECK(st == NVF_ERR_UCX, "acquire with a bad UCX_TLS returned %s", nvf_status_str(st));
        CHECK(ctx == NULL, "acquire failed but left a context pointer");
        CHECK(strstr(nvf_ucx_last_error(), "ucp_init") != NULL,
              "the error does not name ucp_init: '%s'", nvf_ucx_last_error());
        CHECK(strstr(nvf_ucx_last_error(), "nonexistent_transport") != NULL,
              "the error does not carry UCX's reason: '%s'", nvf_ucx_last_error());
        CHECK(strchr(nvf_ucx_last_error(), '\n') == NULL, "the error is not one line");
        CHECK(printed[0] == '\0', "UCX printed during the failed acquire: '%s'", printed);
        tu_check_nothing_left("failed acquire");
        if (attempt == 0)
            printf("  UCX_TLS=nonexistent_transport: %s\n", nvf_ucx_last_error());
    }
    unsetenv("UCX_TLS");
    unsetenv("UCX_TCP_TX_SEG_SIZE");
    unsetenv("UCX_TCP_RX_SEG_SIZE");
    nvf_ucx_ctx_t *ctx = NULL;
    quiet_t q;
    quiet_begin(&q);
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    const char *printed = quiet_end(&q);
    CHECK(st == NVF_OK && ctx != NULL, "acquire after the failures: %s", nvf_ucx_last_error());
    /* nvfabric's defaults for what the environment leaves unset, and only for that; UCX takes
     * them without a word (a name it does not apply draws "invalid configuration") */
    CHECK(printed[0] == '\0', "acquire printed: '%s'", printed);
    if (st == NVF_OK)
        CHECK(strcmp(nvf_ucx_defaults_applied(ctx),
                     "UCX_TCP_TX_SEG_SIZE=64K UCX_TCP_RX_SEG_SIZE=256K") == 0,
              "defaults applied: '%s'", nvf_ucx_defaults_applied(ctx));
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left("acquire after failures");
    setenv("UCX_TCP_TX_SEG_SIZE", "16K", 1);
    ctx = NULL;
    st = nvf_ucx_ctx_acquire(&ctx);
    CHECK(st == NVF_OK && ctx != NULL &&
              strcmp(nvf_ucx_defaults_applied(ctx), "UCX_TCP_RX_SEG_SIZE=256K") == 0,
          "UCX_TCP_TX_SEG_SIZE set by the user, defaults applied: '%s'",
          ctx != NULL ? nvf_ucx_defaults_applied(ctx) : "(no context)");
    nvf_ucx_ctx_release(ctx);
    unsetenv("UCX_TCP_TX_SEG_SIZE");
    tu_check_nothing_left("acquire with a user's UCX variable");
    return nvf_test_failures;
}

/* Protocols v2: either UCX's fence is strong, or acquire refuses (UCX 1.13: its fence is weak
 * and a 256 KiB put was seen overtaken by its flag). */
static int proto_v2_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_PROTO_ENABLE", "y", 1);
    nvf_ucx_ctx_t *ctx = NULL;
    quiet_t q;
    quiet_begin(&q);
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    const char *printed = quiet_end(&q);
    if (st == NVF_OK) {
        CHECK(strcmp(nvf_ucx_ordering(ctx), "strong fence") == 0, "protocols v2 accepted with a %s",
              nvf_ucx_ordering(ctx));
        nvf_ucx_ctx_release(ctx);
    } else {
        CHECK(st == NVF_ERR_UCX && ctx == NULL, "acquire returned %s", nvf_status_str(st));
        CHECK(strstr(nvf_ucx_last_error(), "UCX_PROTO_ENABLE") != NULL,
              "the error does not say what to change: '%s'", nvf_ucx_last_error());
        CHECK(printed[0] == '\0', "printed: '%s'", printed);
        printf("  UCX_PROTO_ENABLE=y: %s\n", nvf_ucx_last_error());
    }
    tu_check_nothing_left("protocols v2");
    return nvf_test_failures;
}

/* A valid setting next to a bad one: UCX's warning is not swallowed on success. */
static int warn_tls_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_TLS", "tcp,nonexistent_transport", 1);
    nvf_ucx_ctx_t *ctx = NULL;
    quiet_t q;
    quiet_begin(&q);
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    const char *printed = quiet_end(&q);
    CHECK(st == NVF_OK, "acquire with UCX_TLS=tcp,nonexistent_transport: %s", nvf_ucx_last_error());
    CHECK(strstr(printed, "nonexistent_transport") != NULL,
          "UCX's warning about the unknown transport was hidden (printed: '%s')", printed);
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left("warning case");
    return nvf_test_failures;
}

static int unreachable_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_TLS", "self", 1);
    nvf_ucx_ctx_t *ctx = NULL;
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    CHECK(st == NVF_OK, "UCX_TLS=self: acquire: %s", nvf_ucx_last_error());
    if (st != NVF_OK)
        return 1;
    int other = 1 - tf->rank;
    nvf_ucx_mesh_params_t p = {tf->rank, &other, 1, &other, 1, 2, 256, tu_protocol};
    nvf_ucx_mesh_t *mesh = NULL;
    const void *blob;
    size_t len;
    st = nvf_ucx_mesh_create(ctx, &p, &mesh, &blob, &len);
    CHECK(st == NVF_OK, "UCX_TLS=self: mesh_create: %s", nvf_ucx_last_error());
    unsigned char *all = malloc(2 * len);
    nvf_tf_allgather(tf, blob, all, len);
    quiet_t q;
    quiet_begin(&q);
    st = nvf_ucx_mesh_connect(mesh, other, all + (size_t)other * len, len);
    const char *printed = quiet_end(&q);
    CHECK(st == NVF_ERR_UCX, "UCX_TLS=self: connect to another process returned %s",
          nvf_status_str(st));
    CHECK(strstr(nvf_ucx_last_error(), "ucp_ep_create to peer") != NULL,
          "the error does not name ucp_ep_create: '%s'", nvf_ucx_last_error());
    CHECK(printed[0] == '\0', "UCX printed during the failed connect: '%s'", printed);
    if (tf->rank == 0)
        printf("  UCX_TLS=self, connect: %s\n", nvf_ucx_last_error());
    bool started = true;
    CHECK(nvf_ucx_send(mesh, other, all, 1, &started) == NVF_ERR_INVALID && !started,
          "send on an unconnected channel accepted");
    nvf_ucx_counters_t c;
    nvf_ucx_get_counters(&c);
    CHECK(c.endpoints == 0 && c.rkeys == 0, "a failed connect left %ld endpoints, %ld rkeys",
          c.endpoints, c.rkeys);
    free(all);
    nvf_ucx_mesh_destroy(mesh);
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left("unreachable");
    return nvf_test_failures;
}

static void expect_invalid_mesh(nvf_ucx_ctx_t *ctx, nvf_ucx_mesh_params_t p, const char *what)
{
    nvf_ucx_mesh_t *mesh = (nvf_ucx_mesh_t *)&p;
    const void *blob;
    size_t len;
    nvf_status_t st = nvf_ucx_mesh_create(ctx, &p, &mesh, &blob, &len);
    CHECK(st == NVF_ERR_INVALID && mesh == NULL, "mesh with %s: %s", what, nvf_status_str(st));
    CHECK(nvf_ucx_last_error()[0] != '\0', "mesh with %s: no message", what);
}

/* One process, a mesh to itself: parameters and blobs are checked before any use. */
static int invalid_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_TLS", "tcp", 1);
    nvf_ucx_ctx_t *ctx = NULL;
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    CHECK(st == NVF_OK, "acquire: %s", nvf_ucx_last_error());
    if (st != NVF_OK)
        return 1;
    int self = 0, dup2ids[2] = {3, 3}, neg = -1;
    expect_invalid_mesh(
        ctx, (nvf_ucx_mesh_params_t){0, &self, 1, &self, 1, 0, 64, NVF_UCX_PROTO_AUTO}, "0 slots");
    expect_invalid_mesh(
        ctx, (nvf_ucx_mesh_params_t){0, &self, 1, &self, 1, 2, 0, NVF_UCX_PROTO_AUTO}, "0 bytes");
    expect_invalid_mesh(ctx,
                        (nvf_ucx_mesh_params_t){0, dup2ids, 2, &self, 1, 2, 64, NVF_UCX_PROTO_AUTO},
                        "a repeated peer");
    expect_invalid_mesh(ctx,
                        (nvf_ucx_mesh_params_t){0, &neg, 1, &self, 1, 2, 64, NVF_UCX_PROTO_AUTO},
                        "a negative peer");
    expect_invalid_mesh(ctx,
                        (nvf_ucx_mesh_params_t){0, NULL, 1, &self, 1, 2, 64, NVF_UCX_PROTO_AUTO},
                        "a NULL list");
    tu_check_no_mesh_state("invalid meshes");

    nvf_ucx_mesh_t *a, *b;
    const void *blob_a, *blob_b;
    size_t len_a, len_b;
    nvf_ucx_mesh_params_t pa = {0, &self, 1, &self, 1, 2, 64, NVF_UCX_PROTO_AUTO}, pb = pa;
    pb.nslots = 3;
    CHECK(nvf_ucx_mesh_create(ctx, &pa, &a, &blob_a, &len_a) == NVF_OK, "mesh a: %s",
          nvf_ucx_last_error());
    CHECK(nvf_ucx_mesh_create(ctx, &pb, &b, &blob_b, &len_b) == NVF_OK, "mesh b: %s",
          nvf_ucx_last_error());
    unsigned char *junk = calloc(1, len_a);
    CHECK(nvf_ucx_mesh_connect(a, 0, junk, len_a) == NVF_ERR_INVALID, "a zero blob accepted");
    CHECK(nvf_ucx_mesh_connect(a, 0, blob_a, 16) == NVF_ERR_INVALID, "a short blob accepted");
    CHECK(nvf_ucx_mesh_connect(a, 0, blob_b, len_b) == NVF_ERR_INVALID,
          "a blob with other nslots accepted");
    CHECK(strstr(nvf_ucx_last_error(), "slots") != NULL, "mismatch message: '%s'",
          nvf_ucx_last_error());
    CHECK(nvf_ucx_mesh_connect(a, 5, blob_a, len_a) == NVF_ERR_INVALID,
          "connect to a peer outside the mesh accepted");
    /* a longer exchange slot than the blob is fine */
    unsigned char *big = calloc(1, len_a + 100);
    memcpy(big, blob_a, len_a);
    CHECK(nvf_ucx_mesh_connect(a, 0, big, len_a + 100) == NVF_OK, "self connect: %s",
          nvf_ucx_last_error());
    free(big);
    CHECK(nvf_ucx_mesh_connect(a, 0, blob_a, len_a) == NVF_ERR_INVALID,
          "a second connect accepted");
    /* the self channel works */
    unsigned char msg[64];
    tu_msg_fill(msg, 64, 0, 0, 0);
    bool started = false;
    CHECK(nvf_ucx_send(a, 0, msg, 64, &started) == NVF_OK && started, "self send: %s",
          nvf_ucx_last_error());
    const void *d = NULL;
    double deadline = nvf_tf_now() + 10 * nvf_tf_slow();
    while (!nvf_ucx_recv_test(a, 0, &d) && nvf_tf_now() < deadline)
        sched_yield();
    CHECK(d != NULL && tu_msg_check(d, 64, 0, 0, 0, "self"), "self message lost");
    CHECK(nvf_ucx_recv_release(a, 0) == NVF_OK, "self release: %s", nvf_ucx_last_error());
    while (!nvf_ucx_send_idle(a, true) && nvf_tf_now() < deadline)
        sched_yield();
    CHECK(nvf_ucx_send_idle(a, true), "self message not released");
    free(junk);
    nvf_ucx_mesh_destroy(a);
    nvf_ucx_mesh_destroy(b);
    tu_check_no_mesh_state("invalid blobs");
    nvf_ucx_ctx_release(ctx);
    tu_check_nothing_left("invalid blobs");
    return nvf_test_failures;
}

/* Rank 1 dies without any teardown; rank 0 must notice, fail its sends and tear down. */
static int peer_death_body(nvf_tf_t *tf, void *arg)
{
    reset_checks();
    setenv("UCX_TLS", "tcp", 1);
    nvf_ucx_ctx_t *ctx = NULL;
    nvf_status_t st = nvf_ucx_ctx_acquire(&ctx);
    CHECK(st == NVF_OK, "acquire: %s", nvf_ucx_last_error());
    if (st != NVF_OK)
        return 1;
    int other = 1 - tf->rank;
    nvf_ucx_mesh_t *mesh =
        tu_mesh_setup(tf, ctx, &other, 1, &other, 1, 2, 128, "UCX_TLS=tcp peer death");
    if (mesh == NULL)
        return 1;
    /* one message each way, so that the connection is up */
    unsigned char msg[128];
    tu_msg_fill(msg, 128, tf->rank, other, 0);
    bool started = false;
    CHECK(nvf_ucx_send(mesh, other, msg, 128, &started) == NVF_OK && started, "send: %s",
          nvf_ucx_last_error());
    const void *d = NULL;
    double deadline = nvf_tf_now() + 10 * nvf_tf_slow();
    while (!nvf_ucx_recv_test(mesh, other, &d) && nvf_tf_now() < deadline)
        sched_yield();
    CHECK(d != NULL, "first message lost");
    CHECK(nvf_ucx_recv_release(mesh, other) == NVF_OK, "release: %s", nvf_ucx_last_error());
    while (!nvf_ucx_send_idle(mesh, true) && nvf_tf_now() < deadline)
        sched_yield();
    nvf_tf_barrier(tf);
    if (tf->rank == 1) {
        usleep((useconds_t)(100000 * nvf_tf_slow()));
        raise(SIGKILL); /* dies: no flush, no close, no exit handlers */
    }
    CHECK(!nvf_ucx_mesh_failed(mesh), "the mesh failed while the peer was alive: %s",
          nvf_ucx_last_error());

    double t0 = nvf_tf_now();
    deadline = t0 + 20 * nvf_tf_slow();
    while (!nvf_ucx_mesh_failed(mesh) && nvf_tf_now() < deadline)
        nvf_ucx_recv_test(mesh, other, &d);
    CHECK(nvf_ucx_mesh_failed(mesh), "the peer's death was not noticed in %.0f s", deadline - t0);
    printf("  UCX_TLS=tcp, peer died: noticed after %.3f s: %s\n", nvf_tf_now() - t0,
           nvf_ucx_last_error());
    nvf_ucx_counters_t c;
    nvf_ucx_get_counters(&c);
    CHECK(c.failed_endpoints == 1, "%ld failed endpoints", c.failed_endpoints);
    st = nvf_ucx_send(mesh, other, msg, 1, &started);
    CHECK(st == NVF_ERR_UCX, "send on a failed mesh returned %s", nvf_status_str(st));
    t0 = nvf_tf_now();
    nvf_ucx_mesh_destroy(mesh);
    nvf_ucx_ctx_release(ctx);
    CHECK(nvf_tf_now() - t0 < 10, "teardown after the peer's death took %.1f s", nvf_tf_now() - t0);
    tu_check_nothing_left("peer death");
    return nvf_test_failures;
}

/* Rank 0 must pass and rank 1 must have been killed (by itself). */
static void run_peer_death(nvf_ucx_protocol_t protocol)
{
    tu_protocol = protocol;
    char name[64];
    snprintf(name, sizeof(name), "peer death (tcp, %s)", tu_protocol_name(protocol));
    int status[2] = {0, 0};
    double t0 = nvf_tf_now();
    nvf_tf_run_status(name, 2, 60, peer_death_body, NULL, status);
    bool ok0 = WIFEXITED(status[0]) && WEXITSTATUS(status[0]) == 0;
    bool ok1 = WIFSIGNALED(status[1]) && WTERMSIG(status[1]) == SIGKILL;
    CHECK(ok0, "%s: the survivor failed (wait status 0x%x)", name, (unsigned)status[0]);
    CHECK(ok1, "%s: the dying process ended otherwise (wait status 0x%x)", name,
          (unsigned)status[1]);
    printf("  %-28s %6.2f s %s\n", name, nvf_tf_now() - t0, ok0 && ok1 ? "ok" : "FAILED");
}

static void run(const char *name, int n, nvf_tf_body_t body)
{
    double t0 = nvf_tf_now();
    int failed = nvf_tf_run(name, n, 60, body, NULL);
    CHECK(failed == 0, "%s: %d of %d processes failed", name, failed, n);
    printf("  %-28s %6.2f s %s\n", name, nvf_tf_now() - t0, failed ? "FAILED" : "ok");
}

int main(void)
{
    run("nonexistent transport", 1, bad_tls_body);
    run("warning kept on success", 1, warn_tls_body);
    run("protocols v2 fence", 1, proto_v2_body);
    run("unreachable peer", 2, unreachable_body);
    run("invalid parameters/blobs", 1, invalid_body);
    run_peer_death(NVF_UCX_PROTO_PUT);
    run_peer_death(NVF_UCX_PROTO_AM);
    return nvf_test_finish("test_ucx_failure");
}
