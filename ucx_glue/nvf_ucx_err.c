/*
 * nvf_ucx_err.c: the glue's last error (one line naming the failing UCX call), its counters, and
 * the capture of UCX's own log messages around calls that may fail.
 *
 * UCX prints its warnings and errors itself (e.g. "no usable transports/devices" before
 * ucp_init fails). During a capture they are kept instead, so that a failure reaches the user as
 * one line (the engine's, carrying UCX's message) and an expected failure (an endpoint without
 * failure detection, tried first) prints nothing. Must not hide anything when the call succeeds:
 * captured messages are then replayed to UCX's log unchanged. Must not touch UCX's log
 * configuration (levels, files).
 */
#include "nvf_ucx_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

nvf_ucx_counters_t nvf_ucx_counters;

static char nvf_ucx_errbuf[512];
/* The active capture (one at a time: the glue's calls are serialized or under its lock). */
static nvf_ucx_capture_t *_Atomic nvf_ucx_active_capture;

const char *nvf_ucx_last_error(void)
{
    return nvf_ucx_errbuf;
}

void nvf_ucx_get_counters(nvf_ucx_counters_t *counters)
{
    *counters = nvf_ucx_counters;
}

/* Messages are one line: newlines and tabs become spaces. */
static void nvf_ucx_one_line(char *s)
{
    for (; *s != '\0'; s++)
        if (*s == '\n' || *s == '\r' || *s == '\t')
            *s = ' ';
}

nvf_status_t nvf_ucx_fail(const char *call, ucs_status_t status, const char *detail)
{
    if (detail != NULL && detail[0] != '\0')
        snprintf(nvf_ucx_errbuf, sizeof(nvf_ucx_errbuf), "%s: %s (%s)", call,
                 ucs_status_string(status), detail);
    else
        snprintf(nvf_ucx_errbuf, sizeof(nvf_ucx_errbuf), "%s: %s", call, ucs_status_string(status));
    nvf_ucx_one_line(nvf_ucx_errbuf);
    return NVF_ERR_UCX;
}

nvf_status_t nvf_ucx_failf(nvf_status_t ret, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(nvf_ucx_errbuf, sizeof(nvf_ucx_errbuf), fmt, ap);
    va_end(ap);
    nvf_ucx_one_line(nvf_ucx_errbuf);
    return ret;
}

static ucs_log_func_rc_t nvf_ucx_log_handler(const char *file, unsigned line, const char *function,
                                             ucs_log_level_t level,
                                             const ucs_log_component_config_t *comp_conf,
                                             const char *message, va_list ap)
{
    nvf_ucx_capture_t *cap = atomic_load(&nvf_ucx_active_capture);
    /* fatal messages (UCX aborts after them) and anything below a warning pass through, and so
     * does every message from another thread */
    if (cap == NULL || level == UCS_LOG_LEVEL_FATAL || level > UCS_LOG_LEVEL_WARN ||
        !pthread_equal(cap->thread, pthread_self()))
        return UCS_LOG_FUNC_RC_CONTINUE;
    if (cap->nmsg < NVF_UCX_CAPTURE_MAX) {
        nvf_ucx_capture_msg_t *m = &cap->msg[cap->nmsg];
        m->file = file;
        m->function = function;
        m->line = line;
        m->level = level;
        m->comp = comp_conf;
        vsnprintf(m->text, sizeof(m->text), message, ap);
        nvf_ucx_one_line(m->text);
    }
    cap->nmsg++;
    return UCS_LOG_FUNC_RC_STOP;
}

void nvf_ucx_capture_begin(nvf_ucx_capture_t *cap)
{
    memset(cap, 0, sizeof(*cap));
    cap->thread = pthread_self();
    cap->handlers_before = ucs_log_num_handlers();
    ucs_log_push_handler(nvf_ucx_log_handler);
    /* the push is silently ignored when UCX's handler table is full: then nothing is captured */
    cap->installed = ucs_log_num_handlers() == cap->handlers_before + 1;
    if (cap->installed)
        atomic_store(&nvf_ucx_active_capture, cap);
}

void nvf_ucx_capture_end(nvf_ucx_capture_t *cap, bool replay)
{
    if (!cap->installed)
        return;
    atomic_store(&nvf_ucx_active_capture, NULL);
    /* pop only our own handler; if someone pushed after us it stays, inert without a capture */
    if (ucs_log_num_handlers() == cap->handlers_before + 1)
        ucs_log_pop_handler();
    if (!replay)
        return;
    int n = cap->nmsg < NVF_UCX_CAPTURE_MAX ? cap->nmsg : NVF_UCX_CAPTURE_MAX;
    for (int i = 0; i < n; i++)
        ucs_log_dispatch(cap->msg[i].file, cap->msg[i].line, cap->msg[i].function,
                         cap->msg[i].level, (ucs_log_component_config_t *)cap->msg[i].comp, "%s",
                         cap->msg[i].text);
}

const char *nvf_ucx_capture_text(const nvf_ucx_capture_t *cap)
{
    int n = cap->nmsg < NVF_UCX_CAPTURE_MAX ? cap->nmsg : NVF_UCX_CAPTURE_MAX;
    for (int i = 0; i < n; i++)
        if (cap->msg[i].level <= UCS_LOG_LEVEL_ERROR)
            return cap->msg[i].text;
    return n > 0 ? cap->msg[0].text : NULL;
}
