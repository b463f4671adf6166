/*
 * test_config.c: the engine's defaults are valid, every out-of-range value is rejected with a
 * message naming its parameter, and the host mode and inter_algorithm parsers accept exactly
 * their words.
 */
#include "coll_nvfabric/nvf.h"
#include "nvf_test.h"

#include <math.h>

#include <string.h>

static void expect_invalid(nvf_config_t cfg, const char *param)
{
    char err[256] = "";
    nvf_status_t st = nvf_config_validate(&cfg, err, sizeof(err));
    CHECK(st == NVF_ERR_INVALID, "a bad %s was accepted", param);
    CHECK(strstr(err, param) != NULL, "message '%s' does not name %s", err, param);
}

int main(void)
{
    nvf_config_t def, cfg;
    char err[256];
    nvf_config_init_defaults(&def);
    CHECK(nvf_config_validate(&def, err, sizeof(err)) == NVF_OK, "defaults rejected: %s", err);
    CHECK(def.host_mode == NVF_HOST_AUTO, "default host mode is %d", (int)def.host_mode);
    CHECK(def.one_shot_max_bytes <= def.shm_block_bytes, "one-shot above block size");

    cfg = def;
    cfg.verbose = -1;
    expect_invalid(cfg, "verbose");
    cfg = def;
    cfg.virtual_node_size = -2;
    expect_invalid(cfg, "virtual_node_size");
    cfg = def;
    cfg.shm_block_bytes = 100;
    expect_invalid(cfg, "shm_block_size");
    cfg = def;
    cfg.one_shot_max_bytes = def.shm_block_bytes + 1;
    expect_invalid(cfg, "one_shot_max");
    cfg = def;
    cfg.shm_block_large_bytes = def.shm_block_bytes; /* not larger than the usual blocks */
    expect_invalid(cfg, "shm_block_large");
    cfg = def;
    cfg.shm_block_large_bytes = ((size_t)1 << 30) + 1;
    expect_invalid(cfg, "shm_block_large");
    cfg = def;
    cfg.shm_block_large_bytes = 0; /* off */
    CHECK(nvf_config_validate(&cfg, err, sizeof(err)) == NVF_OK, "shm_block_large 0: %s", err);
    CHECK(def.shm_block_large_bytes > def.shm_block_bytes, "default large blocks %zu not larger",
          def.shm_block_large_bytes);
    cfg = def;
    cfg.shm_nsets = 1;
    expect_invalid(cfg, "shm_nsets");
    cfg = def;
    cfg.pipeline_depth = def.shm_nsets + 1;
    expect_invalid(cfg, "pipeline_depth");
    cfg = def;
    cfg.pipeline_depth = 0;
    expect_invalid(cfg, "pipeline_depth");
    cfg = def;
    cfg.spin_before_yield = -2;
    expect_invalid(cfg, "spin_before_yield");
    cfg = def;
    cfg.inter_slot_bytes = 10;
    expect_invalid(cfg, "inter_slot_size");
    cfg = def;
    cfg.inter_alpha_us = -1;
    expect_invalid(cfg, "inter_alpha");
    cfg = def;
    cfg.intra_bw_gbs = 0;
    expect_invalid(cfg, "intra_bw");
    cfg = def;
    cfg.cache_speedup = 0.5;
    expect_invalid(cfg, "cache_speedup");
    cfg.cache_speedup = NAN;
    expect_invalid(cfg, "cache_speedup");
    cfg = def;
    cfg.host_mode = (nvf_host_mode_t)7;
    expect_invalid(cfg, "host");

    const struct {
        const char *text;
        nvf_status_t st;
        nvf_host_mode_t mode;
    } words[] = {
        {"auto", NVF_OK, NVF_HOST_AUTO}, {"AUTO", NVF_OK, NVF_HOST_AUTO},
        {"on", NVF_OK, NVF_HOST_ON},     {"1", NVF_OK, NVF_HOST_ON},
        {"yes", NVF_OK, NVF_HOST_ON},    {"true", NVF_OK, NVF_HOST_ON},
        {"off", NVF_OK, NVF_HOST_OFF},   {"0", NVF_OK, NVF_HOST_OFF},
        {"No", NVF_OK, NVF_HOST_OFF},    {"false", NVF_OK, NVF_HOST_OFF},
        {"", NVF_ERR_INVALID, 0},        {"onn", NVF_ERR_INVALID, 0},
        {"2", NVF_ERR_INVALID, 0},       {"automatic", NVF_ERR_INVALID, 0},
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        nvf_host_mode_t mode = (nvf_host_mode_t)99;
        nvf_status_t st = nvf_parse_host_mode(words[i].text, &mode);
        CHECK(st == words[i].st, "parse '%s' gave status %d", words[i].text, (int)st);
        if (st == NVF_OK && words[i].st == NVF_OK)
            CHECK(mode == words[i].mode, "parse '%s' gave mode %d", words[i].text, (int)mode);
    }
    nvf_host_mode_t mode;
    CHECK(nvf_parse_host_mode(NULL, &mode) == NVF_ERR_INVALID, "NULL accepted");
    for (int m = NVF_HOST_AUTO; m <= NVF_HOST_OFF; m++) {
        CHECK(nvf_parse_host_mode(nvf_host_mode_name((nvf_host_mode_t)m), &mode) == NVF_OK &&
                  mode == (nvf_host_mode_t)m,
              "name of mode %d does not parse back", m);
    }
    cfg = def;
    cfg.inter_large = (nvf_inter_large_t)3;
    expect_invalid(cfg, "inter_algorithm");
    CHECK(def.inter_large == NVF_INTER_LARGE_AUTO, "default inter_algorithm is %d",
          (int)def.inter_large);
    const struct {
        const char *text;
        nvf_status_t st;
        nvf_inter_large_t alg;
    } algs[] = {
        {"auto", NVF_OK, NVF_INTER_LARGE_AUTO},
        {"Ring", NVF_OK, NVF_INTER_LARGE_RING},
        {"rhd", NVF_OK, NVF_INTER_LARGE_RHD},
        {"RHD", NVF_OK, NVF_INTER_LARGE_RHD},
        {"rd", NVF_ERR_INVALID, 0},
        {"", NVF_ERR_INVALID, 0},
        {"on", NVF_ERR_INVALID, 0},
        {"rings", NVF_ERR_INVALID, 0},
    };
    for (size_t i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
        nvf_inter_large_t alg = (nvf_inter_large_t)99;
        nvf_status_t st = nvf_parse_inter_large(algs[i].text, &alg);
        CHECK(st == algs[i].st, "parse inter_algorithm '%s' gave status %d", algs[i].text, (int)st);
        if (st == NVF_OK && algs[i].st == NVF_OK)
            CHECK(alg == algs[i].alg, "parse '%s' gave %d", algs[i].text, (int)alg);
    }
    nvf_inter_large_t alg;
    CHECK(nvf_parse_inter_large(NULL, &alg) == NVF_ERR_INVALID, "NULL inter_algorithm accepted");
    for (int a = NVF_INTER_LARGE_AUTO; a <= NVF_INTER_LARGE_RHD; a++) {
        CHECK(nvf_parse_inter_large(nvf_inter_large_name((nvf_inter_large_t)a), &alg) == NVF_OK &&
                  alg == (nvf_inter_large_t)a,
              "name of inter_algorithm %d does not parse back", a);
    }
    return nvf_test_finish("test_config");
}
