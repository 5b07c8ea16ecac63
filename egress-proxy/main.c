/*
 * main.c: sandgate-proxy, the filtering HTTP/CONNECT egress proxy that is
 * the sandboxes' only way out. Options, start-up, signals, the event loop.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "addr.h"
#include "checkpoint.h"
#include "token.h"
#include "blocklog.h"
#include "conn.h"
#include "control.h"
#include "ctltcp.h"
#include "polwatch.h"
#include "dns.h"
#include "eventlog.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "execcred.h"
#include "grants.h"
#include "registry.h"
#include "sni.h"
#include "tlsca.h"
#include "tlsterm.h"
#include "uppool.h"
#include "tunnel.h"
#include "util.h"

/* Exit codes of sandgate-proxy (docs/proxy.md). */
enum {
	PX_EXIT_OK = 0,
	PX_EXIT_CONFIG = 1,	/* bad policy, log folder, listener, log not closed */
	PX_EXIT_USAGE = 2
};

#define MAIN_MAX_LISTEN		16
#define MAIN_DRAIN_SECS		30

static struct proxy		 main_px;
static struct evconnlistener	*main_listeners[MAIN_MAX_LISTEN];
static size_t			 main_nlisteners;
static struct event		*main_drain_timer;
static int			 main_sigterms;
static unsigned long long	 main_trimmed_at;
/* Signed checkpoints (checkpoint.h): --checkpoint-key and its rhythm. */
static struct checkpoint	*main_ckpt;
static struct checkpoint_opts	 main_ckpt_opts = {
	.every_events = CHECKPOINT_EVERY_DEFAULT,
	.every_secs = CHECKPOINT_SECS_DEFAULT,
	.lock = CHECKPOINT_LOCK_SOLE,
};

static void	main_usage(FILE *);
static int	main_options(int, char **, struct proxy_config *);
static int	main_config_file(const char *, struct proxy_config *);
static int	main_option(int, const char *, struct proxy_config *);
static int	main_option_checked(int, const char *, struct proxy_config *);
static int	main_option_number(int, const char *, struct proxy_config *);
static int	main_listen(struct proxy *, const char *);
static void	main_accept(struct evconnlistener *, evutil_socket_t,
		    struct sockaddr *, int, void *);
static void	main_accept_error(struct evconnlistener *, void *);
static void	main_accept_resume(evutil_socket_t, short, void *);
static void	main_signal(evutil_socket_t, short, void *);
static void	main_tick(evutil_socket_t, short, void *);
static void	main_raise_nofile(void);
static int	main_checkpoint_open(struct proxy *);
static void	main_check_key(const char *, char **);
static int	main_policy(struct proxy *);
static int	main_check(struct proxy *);
static void	main_check_token(const char *, char **);
static int	main_log_open(struct proxy *);
static int	main_loop_new(struct proxy *);
static int	main_ca_load(struct proxy *);
static int	main_tokens_load(struct proxy *);
static void	main_signals(struct proxy *);
static int	main_control_tcp(struct proxy *);
static int	main_run(struct proxy *);

static const struct option main_longopts[] = {
	{ "listen",		required_argument, NULL, 'l' },
	{ "policy-dir",		required_argument, NULL, 'p' },
	{ "log-dir",		required_argument, NULL, 'L' },
	{ "sets",		required_argument, NULL, 's' },
	{ "resolver",		required_argument, NULL, 'r' },
	{ "hosts",		required_argument, NULL, 'H' },
	{ "control-socket",	required_argument, NULL, 'c' },
	{ "control-listen",	required_argument, NULL, 'O' },
	{ "control-token-file",	required_argument, NULL, 'Q' },
	{ "control-tls-cert",	required_argument, NULL, 'e' },
	{ "control-tls-key",	required_argument, NULL, 'g' },
	{ "policy-watch",	no_argument,	   NULL, 'w' },
	{ "ca-cert",		required_argument, NULL, 'a' },
	{ "ca-key",		required_argument, NULL, 'y' },
	{ "ca-create",		no_argument,	   NULL, 'j' },
	{ "secrets-dir",	required_argument, NULL, 'Z' },
	{ "config",		required_argument, NULL, 'f' },
	{ "log-allowed",	no_argument,	   NULL, 'A' },
	{ "log-max-size",	required_argument, NULL, 'M' },
	{ "log-keep",		required_argument, NULL, 'K' },
	{ "checkpoint-key",	required_argument, NULL, 'k' },
	{ "checkpoint-every",	required_argument, NULL, 'E' },
	{ "checkpoint-interval", required_argument, NULL, 'i' },
	{ "log-keep-min-age",	required_argument, NULL, 'Y' },
	{ "max-conns",		required_argument, NULL, 'm' },
	{ "max-conns-per-client", required_argument, NULL, 'C' },
	{ "max-buffer-per-client", required_argument, NULL, 'U' },
	{ "head-timeout",	required_argument, NULL, 'T' },
	{ "idle-timeout",	required_argument, NULL, 'I' },
	{ "connect-timeout",	required_argument, NULL, 'X' },
	{ "block-burst",	required_argument, NULL, 'B' },
	{ "block-budget",	required_argument, NULL, 'G' },
	{ "block-window",	required_argument, NULL, 'W' },
	{ "token-key",		required_argument, NULL, 't' },
	{ "token-any-source",	no_argument,	   NULL, 'q' },
	{ "instance",		required_argument, NULL, 'N' },
	{ "check",		no_argument,	   NULL, 'n' },
	{ "verbose",		no_argument,	   NULL, 'v' },
	{ "help",		no_argument,	   NULL, 'h' },
	{ "version",		no_argument,	   NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static int	main_check_only;
static void	main_serial_base(struct proxy *);
static void	main_set_str(const char **, const char *);

static const char main_usage_text[] =
"usage: sandgate-proxy [OPTIONS]\n"
"\n"
"The sandboxes' only way out: an HTTP forward and CONNECT proxy that allows\n"
"only the destinations of policy.d/ allowlists and logs every block.\n"
"\n"
"  --listen ADDR:PORT      listen here (repeatable; [::1]:3128 for IPv6;\n"
"                          default 0.0.0.0:3128)\n"
"  --policy-dir DIR        allowlist folder (default: $SANDGATE_POLICY_DIR or\n"
"                          " SANDGATE_DEFAULT_POLICY_DIR ")\n"
"  --log-dir DIR           security-event log folder (default:\n"
"                          $SANDGATE_LOG_DIR or " SANDGATE_DEFAULT_LOG_DIR ")\n"
"  --sets a,b              sets in force for clients not registered to a\n"
"                          sandbox (default: none, so everything is blocked)\n"
"  --resolver IP:PORT      DNS server to ask (default: /etc/resolv.conf)\n"
"  --hosts FILE            static name map in /etc/hosts format, asked first\n"
"  --control-socket PATH   unix socket for register/unregister/reload/status\n"
"                          and /metrics (default: none)\n"
"  --control-listen ADDR:PORT  the same API over TCP, for a controller on\n"
"                          another host (needs --control-socket and\n"
"                          --control-token-file); /healthz and /readyz\n"
"                          there need no token\n"
"  --control-token-file FILE  the bearer token of that API (one line of at\n"
"                          least 43 random characters, mode 600)\n"
"  --control-tls-cert FILE  serve that API over TLS with this certificate\n"
"                          chain (PEM); its token then never crosses the\n"
"                          network in clear\n"
"  --control-tls-key FILE  its private key (PEM)\n"
"  --policy-watch          reload when the policy folder's ..data link is\n"
"                          replaced (a Kubernetes ConfigMap update); on by\n"
"                          default when the folder has ..data\n"
"  --ca-cert FILE          the sandgate CA's certificate (PEM), for entries\n"
"                          with tls: terminate (without it they are refused)\n"
"  --ca-key FILE           its private key (PEM, readable by this user alone)\n"
"  --ca-create             make that CA first when --ca-key does not exist\n"
"  --secrets-dir DIR       values of the credentials terminated entries name\n"
"                          (one file per secret, readable by this user alone)\n"
"  --config FILE           read options from FILE: one \"name value\" a line,\n"
"                          names as the long options without --\n"
"  --log-allowed           log allowed connections too (egress.allowed)\n"
"  --log-max-size SIZE     rotate the log past SIZE (default 100m; 0: never)\n"
"  --log-keep N            rotated files kept (default 10)\n"
"  --checkpoint-key FILE   sign checkpoints into the log with this Ed25519\n"
"                          private key (PEM, outside the log folder,\n"
"                          readable by this user alone); FILE.next, when\n"
"                          present, is introduced and takes over\n"
"  --checkpoint-every N    a checkpoint after N events (default 1000;\n"
"                          0: none by count)\n"
"  --checkpoint-interval S and every S seconds (default 60)\n"
"  --log-keep-min-age D    never delete a rotated file younger than D (30m,\n"
"                          2h, 7d), even past --log-keep (default 0: off)\n"
"  --max-conns N           connections in all (default 16384)\n"
"  --max-conns-per-client N  per client address (default 256)\n"
"  --max-buffer-per-client SIZE  bytes buffered for one client address\n"
"                          over all its connections; past it none is read\n"
"                          until half has drained (default 16m)\n"
"  --head-timeout S        seconds to receive a request head (default 10)\n"
"  --connect-timeout S     seconds to connect upstream (default 10)\n"
"  --idle-timeout S        seconds a tunnel or response may idle (default 300)\n"
"  --block-burst N         full egress.blocked lines per client, destination\n"
"                          and reason in a window; later ones are counted\n"
"                          into one egress.blocked_summary (default 5)\n"
"  --block-budget N        full egress.blocked lines per client in a window\n"
"                          (default 50)\n"
"  --block-window S        the window, in seconds (default 10)\n"
"  --token-key PUB         accept sandbox tokens signed by this Ed25519 key\n"
"                          (PEM public key; repeatable, for rotation)\n"
"  --token-any-source      a valid token counts from an address no sandbox\n"
"                          registered (a replica not told of sandboxes)\n"
"  --instance NAME         this replica's name: the log is\n"
"                          security-events.NAME.jsonl, /status and metrics\n"
"                          name it\n"
"  --check                 load the policy and the options, then exit\n"
"  -v, --verbose           debug trace on stderr\n"
"  -h, --help              this text\n"
"\n"
"Signals: SIGTERM/SIGINT drain then exit (a second one exits at once),\n"
"SIGHUP reloads the policy, SIGUSR1 reopens the log (logrotate).\n"
"Exit codes: 0 clean exit, 1 bad configuration or policy, or the log could\n"
"not be closed with a signed checkpoint its anchor names, 2 usage error.\n";

static void
main_usage(FILE *f)
{
	fputs(main_usage_text, f);
}

/*
 * Block serials start at the wall clock in microseconds, not at 0: a
 * cursor handed out before a restart (blocks_seq of GET /status) is then
 * below every serial after it, unless the clock went back or a run
 * averaged more than one block a microsecond.
 */
static void
main_serial_base(struct proxy *px)
{
	struct timespec	ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && ts.tv_sec > 0)
		px->block_serial = (unsigned long long)ts.tv_sec * 1000000 +
		    (unsigned long long)ts.tv_nsec / 1000;
}

/*
 * A string option: a later one (the command line after --config, or a
 * repeated option) replaces the earlier, which is freed. Defaults are set
 * after parsing, so every earlier value here is one of ours.
 */
static void
main_set_str(const char **dst, const char *arg)
{
	free((char *)*dst);
	*dst = util_xstrdup(arg);
}

/* Apply one option; shared by the command line and --config. */
static int
main_option(int ch, const char *arg, struct proxy_config *cfg)
{
	int	rc;

	switch (ch) {
	case 'p': main_set_str(&cfg->policy_dir, arg); return 0;
	case 'L': main_set_str(&cfg->log_dir, arg); return 0;
	case 's': main_set_str(&cfg->sets, arg); return 0;
	case 'r': main_set_str(&cfg->resolver, arg); return 0;
	case 'H': main_set_str(&cfg->hosts, arg); return 0;
	case 'c': main_set_str(&cfg->control_socket, arg); return 0;
	case 'O': main_set_str(&cfg->control_listen, arg); return 0;
	case 'Q': main_set_str(&cfg->control_token, arg); return 0;
	case 'e': main_set_str(&cfg->control_tls_cert, arg); return 0;
	case 'g': main_set_str(&cfg->control_tls_key, arg); return 0;
	case 'w': cfg->policy_watch = 1; return 0;
	case 'a': main_set_str(&cfg->ca_cert, arg); return 0;
	case 'y': main_set_str(&cfg->ca_key, arg); return 0;
	case 'j': cfg->ca_create = 1; return 0;
	case 'Z': main_set_str(&cfg->secrets_dir, arg); return 0;
	case 'A': cfg->log_allowed = 1; return 0;
	case 'q': cfg->token_any_source = 1; return 0;
	case 'k': main_set_str(&main_ckpt_opts.key_path, arg); return 0;
	case 'v': cfg->verbose++; return 0;
	case 'n': main_check_only = 1; return 0;
	default:
		break;
	}
	if ((rc = main_option_checked(ch, arg, cfg)) != 1)
		return rc;
	return main_option_number(ch, arg, cfg);
}

/* The options whose value is checked as it is read; 1: not one of them. */
static int
main_option_checked(int ch, const char *arg, struct proxy_config *cfg)
{
	switch (ch) {
	case 'l':
		if (cfg->nlisten == MAIN_MAX_LISTEN) {
			log_warnx("too many --listen (at most %d)",
			    MAIN_MAX_LISTEN);
			return -1;
		}
		cfg->listen[cfg->nlisten++] = util_xstrdup(arg);
		return 0;
	case 'N':
		if (!policy_set_name_valid(arg)) {
			log_warnx("invalid --instance \"%s\" (1-64 of a-z, 0-9, "
			    "'_' and '-')", arg);
			return -1;
		}
		main_set_str(&cfg->instance, arg);
		return 0;
	case 't':
		if (cfg->ntoken_keys == TOKEN_KEYS_MAX) {
			log_warnx("too many --token-key (at most %d)",
			    TOKEN_KEYS_MAX);
			return -1;
		}
		cfg->token_keys[cfg->ntoken_keys++] = util_xstrdup(arg);
		return 0;
	case 'M':
		if (util_parse_size(arg, &cfg->log_max_size) == -1) {
			log_warnx("invalid --log-max-size \"%s\"", arg);
			return -1;
		}
		return 0;
	case 'U':
		if (util_parse_size(arg, &cfg->max_buffer_per_client) == -1 ||
		    cfg->max_buffer_per_client < PROXY_HIGH_WATER) {
			log_warnx("invalid --max-buffer-per-client \"%s\" (a "
			    "size of at least 256k, such as 16m)", arg);
			return -1;
		}
		return 0;
	case 'Y':
		if (util_parse_duration(arg, &cfg->log_keep_min_age) == -1) {
			log_warnx("invalid --log-keep-min-age \"%s\" (use 30m, "
			    "2h, 7d)", arg);
			return -1;
		}
		return 0;
	default:
		return 1;
	}
}

/* The options that take a whole number. */
static int
main_option_number(int ch, const char *arg, struct proxy_config *cfg)
{
	long long	 v;
	const char	*errstr;

	if (util_strtonum(arg, ch == 'E' ? 0 : 1, 10000000, &v,
	    &errstr) == -1) {
		log_warnx("invalid value \"%s\": %s", arg, errstr);
		return -1;
	}
	switch (ch) {
	case 'K': cfg->log_keep = (unsigned)v; break;
	case 'm': cfg->max_conns = (unsigned)v; break;
	case 'C': cfg->max_conns_per_client = (unsigned)v; break;
	case 'T': cfg->head_timeout_ms = (unsigned)v * 1000; break;
	case 'I': cfg->idle_timeout_ms = (unsigned)v * 1000; break;
	case 'X': cfg->connect_timeout_ms = (unsigned)v * 1000; break;
	case 'E': main_ckpt_opts.every_events = (unsigned long long)v; break;
	case 'i': main_ckpt_opts.every_secs = (unsigned long long)v; break;
	case 'B': cfg->block_burst = (unsigned)v; break;
	case 'G': cfg->block_budget = (unsigned)v; break;
	case 'W': cfg->block_window_s = (unsigned)v; break;
	default: return -1;
	}
	return 0;
}

/* --config FILE: "name value" lines, '#' comments. */
static int
main_config_file(const char *path, struct proxy_config *cfg)
{
	const struct option	*o;
	FILE			*f;
	char			 line[4096], *name, *val, *end;
	int			 lineno = 0, rc = 0;

	if ((f = fopen(path, "re")) == NULL) {
		log_warn("%s", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if ((end = strchr(line, '#')) != NULL)
			*end = '\0';
		name = line + strspn(line, " \t");
		val = name + strcspn(name, " \t\r\n");
		if (val == name)
			continue;
		if (*val != '\0')
			*val++ = '\0';
		val += strspn(val, " \t");
		val[strcspn(val, "\r\n")] = '\0';
		for (o = main_longopts; o->name != NULL; o++)
			if (strcmp(o->name, name) == 0)
				break;
		if (o->name == NULL || o->val == 'f' || o->val == 'h' ||
		    o->val == 'V') {
			log_warnx("%s:%d: unknown setting \"%s\"", path,
			    lineno, name);
			rc = -1;
			continue;
		}
		if ((o->has_arg == required_argument) != (*val != '\0')) {
			log_warnx("%s:%d: setting \"%s\" %s", path, lineno,
			    name, *val ? "takes no value" : "needs a value");
			rc = -1;
			continue;
		}
		if (main_option(o->val, val, cfg) == -1) {
			log_warnx("%s:%d: in setting \"%s\"", path, lineno, name);
			rc = -1;
		}
	}
	fclose(f);
	return rc;
}

/* Returns -1 to exit with PX_EXIT_USAGE, 1 to exit 0 (help), else 0. */
static int
main_options(int argc, char **argv, struct proxy_config *cfg)
{
	int	ch;

	cfg->listen = util_xcalloc(MAIN_MAX_LISTEN, sizeof(char *));
	cfg->token_keys = util_xcalloc(TOKEN_KEYS_MAX, sizeof(char *));
	cfg->head_timeout_ms = PROXY_HEAD_TIMEOUT_MS;
	cfg->keepalive_timeout_ms = PROXY_KEEPALIVE_TIMEOUT_MS;
	cfg->dns_timeout_ms = PROXY_DNS_TIMEOUT_MS;
	cfg->connect_timeout_ms = PROXY_CONNECT_TIMEOUT_MS;
	cfg->hello_timeout_ms = PROXY_HELLO_TIMEOUT_MS;
	cfg->idle_timeout_ms = PROXY_IDLE_TIMEOUT_MS;
	cfg->max_conns = PROXY_MAX_CONNS;
	cfg->max_conns_per_client = PROXY_MAX_CONNS_PER_CLIENT;
	cfg->max_buffer_per_client = PROXY_MAX_BUFFER_PER_CLIENT;
	cfg->log_max_size = 100ULL << 20;
	cfg->log_keep = 10;
	cfg->block_burst = BLOCKLOG_BURST_DEFAULT;
	cfg->block_budget = BLOCKLOG_BUDGET_DEFAULT;
	cfg->block_window_s = BLOCKLOG_WINDOW_DEFAULT;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":vhn", main_longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'h':
			main_usage(stdout);
			return 1;
		case 'V':
			printf("sandgate-proxy %s\n", SANDGATE_VERSION);
			return 1;
		case 'f':
			if (main_config_file(optarg, cfg) == -1)
				return -1;
			break;
		case ':':
			log_warnx("option '%s' needs a value", argv[optind - 1]);
			return -1;
		case '?':
			if (optopt != 0)
				log_warnx("unknown option '-%c'", optopt);
			else
				log_warnx("unknown option '%s'",
				    argv[optind - 1]);
			return -1;
		default:
			if (main_option(ch, optarg, cfg) == -1)
				return -1;
		}
	}
	if (optind < argc) {
		log_warnx("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (cfg->nlisten == 0)
		cfg->listen[cfg->nlisten++] = util_xstrdup("0.0.0.0:3128");
	if (cfg->policy_dir == NULL)
		cfg->policy_dir = getenv("SANDGATE_POLICY_DIR") ?
		    getenv("SANDGATE_POLICY_DIR") : SANDGATE_DEFAULT_POLICY_DIR;
	if (cfg->log_dir == NULL)
		cfg->log_dir = getenv("SANDGATE_LOG_DIR") ?
		    getenv("SANDGATE_LOG_DIR") : SANDGATE_DEFAULT_LOG_DIR;
	if (cfg->sets == NULL)
		cfg->sets = "";
	return 0;
}

static int
main_listen(struct proxy *px, const char *spec)
{
	struct sockaddr_storage	 ss;
	struct evconnlistener	*l;
	int			 len = sizeof(ss);
	uint16_t		 port;

	memset(&ss, 0, sizeof(ss));
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &len) ==
	    -1) {
		log_warnx("invalid --listen \"%s\" (use ADDR:PORT or "
		    "[IPv6]:PORT)", spec);
		return -1;
	}
	l = evconnlistener_new_bind(px->base, main_accept, px,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    1024, (struct sockaddr *)&ss, len);
	if (l == NULL) {
		log_warn("cannot listen on %s", spec);
		return -1;
	}
	evconnlistener_set_error_cb(l, main_accept_error);
	main_listeners[main_nlisteners++] = l;
	port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	px->ports = realloc(px->ports, (px->nports + 1) * sizeof(*px->ports));
	if (px->ports == NULL)
		fatal("realloc");
	px->ports[px->nports++] = port;
	addr_set_add(px->self, (struct sockaddr *)&ss);
	return 0;
}

static void
main_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int socklen, void *arg)
{
	conn_accept(arg, fd, sa, socklen);
}

static void
main_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	evconnlistener_enable(arg);
}

/* Out of descriptors: pause accepting for a second rather than spin. */
static void
main_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval	tv = { 1, 0 };
	int		err = EVUTIL_SOCKET_ERROR();

	log_warnx("accept: %s", evutil_socket_error_to_string(err));
	if (err == EMFILE || err == ENFILE || err == ENOBUFS ||
	    err == ENOMEM) {
		evconnlistener_disable(l);
		event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT,
		    main_accept_resume, l, &tv);
	}
}

static void
main_signal(evutil_socket_t sig, short what, void *arg)
{
	struct proxy	*px = arg;
	struct timeval	 tv = { 1, 0 };
	char		*errors;
	size_t		 i;

	switch (sig) {
	case SIGHUP:
		proxy_reload(px, &errors);
		free(errors);
		return;
	case SIGUSR1:
		if (eventlog_reopen(px->seclog) == -1)
			log_warn("reopening the security-event log");
		return;
	default:
		break;
	}
	if (++main_sigterms > 1) {
		log_info("second signal: exiting now");
		event_base_loopbreak(px->base);
		return;
	}
	log_info("draining: no new connections, exiting within %d s",
	    MAIN_DRAIN_SECS);
	px->draining = 1;
	for (i = 0; i < main_nlisteners; i++)
		evconnlistener_disable(main_listeners[i]);
	conn_drain_idle(px);
	px->drain_deadline = time(NULL) + MAIN_DRAIN_SECS;
	evtimer_add(main_drain_timer, &tv);
}

/* Every second: sync the log; while draining, exit once idle. */
static void
main_tick(evutil_socket_t fd, short what, void *arg)
{
	struct proxy	*px = arg;
	struct timeval	 tv = { 1, 0 };
	unsigned	 n;

	proxy_log_flush_blocks(px, 0);
	control_grants_tick(px);
	if ((n = conn_token_expire(px)) > 0)
		log_info("%u connections closed: their token expired", n);
	ctltcp_tick(px);
	if (main_ckpt != NULL && checkpoint_tick(main_ckpt) == -1)
		log_warnx("checkpoint: %s", checkpoint_error(main_ckpt));
	px->log_anchor_ok = main_ckpt == NULL || checkpoint_anchored(main_ckpt);
	if (eventlog_tick(px->seclog) == -1)
		log_warnx("security-event log: %s", eventlog_error(px->seclog));
	proxy_log_check_space(px);
	/* After a burst, give freed memory back once nothing is open. */
	if (conn_count(px) == 0 && px->stats.conns_total != main_trimmed_at) {
		tunnel_pool_release();
		malloc_trim(0);
		main_trimmed_at = px->stats.conns_total;
	}
	if (px->draining) {
		conn_drain_idle(px);
		if (conn_count(px) == 0 || time(NULL) >= px->drain_deadline) {
			event_base_loopexit(px->base, NULL);
			return;
		}
	}
	evtimer_add(main_drain_timer, &tv);
}

/*
 * --checkpoint-key: the key must not sit in the log folder; the signer
 * hooks into the log (its "open" checkpoint comes when the set-up is
 * done). -1 if the key cannot be used.
 */
static int
main_checkpoint_open(struct proxy *px)
{
	char	*cause = NULL;

	if (main_ckpt_opts.key_path == NULL)
		return 0;
	if (checkpoint_key_outside(main_ckpt_opts.key_path, px->cfg.log_dir,
	    &cause) == -1 || (main_ckpt = checkpoint_new(px->seclog,
	    &main_ckpt_opts, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		return -1;
	}
	log_info("checkpoints signed by key %s, every %llu events and %llu s",
	    checkpoint_key(main_ckpt), main_ckpt_opts.every_events,
	    main_ckpt_opts.every_secs);
	return 0;
}

/* --check: the key loads, and its anchor, if any, is well formed. */
static void
main_check_key(const char *path, char **cause)
{
	struct checkpoint_anchor	 an;
	char				*anchor;

	EVP_PKEY_free(checkpoint_key_load(path, cause));
	if (*cause != NULL)
		return;
	util_xasprintf(&anchor, "%s.anchor", path);
	(void)checkpoint_anchor_read(anchor, &an, cause);
	free(anchor);
}

/* Tunnels take two descriptors each: allow as many as the hard limit. */
static void
main_raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * The policy in force at start and the sets of --sets; -1 (said) if the
 * policy has errors or --sets does not parse.
 */
static int
main_policy(struct proxy *px)
{
	struct policy_diags	 diags;
	struct policy		*p;
	const char		*errstr;
	size_t			 i;

	p = proxy_load_policy(px->cfg.policy_dir, &diags);
	policy_diags_release(&diags);
	if (p == NULL) {
		log_warnx("policy in %s has errors; not starting",
		    px->cfg.policy_dir);
		return -1;
	}
	px->policy = util_xcalloc(1, sizeof(*px->policy));
	px->policy->policy = p;
	px->policy->refs = 1;
	if (*px->cfg.sets != '\0' && policy_set_list_parse(px->cfg.sets,
	    &px->default_sets, &px->ndefault_sets, &errstr) == -1) {
		log_warnx("invalid --sets \"%s\": %s", px->cfg.sets, errstr);
		return -1;
	}
	if (px->default_sets == NULL)
		px->default_sets = util_xcalloc(1, sizeof(char *));
	for (i = 0; i < px->ndefault_sets; i++)
		if (!policy_set_exists(p, px->default_sets[i]))
			log_warnx("--sets names \"%s\", which is not a set in "
			    "%s", px->default_sets[i], px->cfg.policy_dir);
	return 0;
}

/* --check: the control API's token file keeps its rules. */
static void
main_check_token(const char *path, char **cause)
{
	char	tok[CTLTCP_TOKEN_MAX + 1];

	if (ctltcp_token_read(path, tok, sizeof(tok), cause) == -1)
		util_cause(cause, "--control-token-file %s: %s", path, *cause);
	explicit_bzero(tok, sizeof(tok));
}

/*
 * --check: the policy loaded; the checkpoint key and the control API's
 * token, if any, must load too.
 */
static int
main_check(struct proxy *px)
{
	char	*cause = NULL;

	if (main_ckpt_opts.key_path != NULL &&
	    checkpoint_key_outside(main_ckpt_opts.key_path, px->cfg.log_dir,
	    &cause) == 0)
		main_check_key(main_ckpt_opts.key_path, &cause);
	if (cause == NULL && px->cfg.control_token != NULL)
		main_check_token(px->cfg.control_token, &cause);
	if (cause != NULL) {
		log_warnx("%s", cause);
		free(cause);
		return PX_EXIT_CONFIG;
	}
	printf("sandgate-proxy: configuration OK, policy digest %s\n",
	    policy_digest(px->policy->policy));
	return PX_EXIT_OK;
}

/*
 * The security-event log, its checkpoint signer and the block counters;
 * -1 (said) if the log cannot be opened or the key cannot be used.
 */
static int
main_log_open(struct proxy *px)
{
	struct eventlog_opts	 lopts;
	char			*cause = NULL;
	char			 name[96] = "security-events.jsonl";

	memset(&lopts, 0, sizeof(lopts));
	lopts.max_size = px->cfg.log_max_size;
	lopts.keep = px->cfg.log_keep;
	lopts.keep_min_age = px->cfg.log_keep_min_age;
	/* With a key, its anchor says where to go on (atk20r16 F3). */
	lopts.no_end_ok = main_ckpt_opts.key_path != NULL;
	px->started = time(NULL);
	main_serial_base(px);
	if (px->cfg.instance != NULL)
		snprintf(name, sizeof(name), "security-events.%s.jsonl",
		    px->cfg.instance);
	px->seclog = eventlog_open(px->cfg.log_dir, name, &lopts, &cause);
	if (px->seclog == NULL) {
		log_warnx("cannot open the security-event log in %s: %s",
		    px->cfg.log_dir, cause ? cause : "unknown error");
		free(cause);
		return -1;
	}
	if (main_checkpoint_open(px) == -1)
		return -1;
	if (proxy_log_blocks_init(px) == -1)
		fatalx("out of memory");
	return 0;
}

/*
 * The CA of tls: terminate entries, when --ca-cert and --ca-key name it,
 * and the TLS contexts of terminated sessions. -1 (said) when it cannot
 * be loaded; without the options, such entries are refused.
 */
static int
main_ca_load(struct proxy *px)
{
	char	*cause = NULL;

	if (px->cfg.ca_cert == NULL && px->cfg.ca_key == NULL)
		return 0;
	if (px->cfg.ca_cert == NULL || px->cfg.ca_key == NULL) {
		log_warnx("--ca-cert and --ca-key go together");
		return -1;
	}
	if (checkpoint_key_outside(px->cfg.ca_key, px->cfg.log_dir,
	    &cause) == -1) {
		log_warnx("--ca-key: %s", cause);
		free(cause);
		return -1;
	}
	/* A core dump would hold the CA key. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		log_warn("cannot make the proxy not dumpable");
	if (px->cfg.ca_create && tlsca_create(px->cfg.ca_cert,
	    px->cfg.ca_key, "sandgate CA", (uid_t)-1, (gid_t)-1, &cause) ==
	    -1) {
		log_warnx("cannot make the CA: %s", cause ? cause :
		    "unknown error");
		free(cause);
		return -1;
	}
	if ((px->ca = tlsca_load(px->cfg.ca_cert, px->cfg.ca_key,
	    &cause)) == NULL || (px->term = tlsterm_new(&cause)) == NULL) {
		log_warnx("TLS termination: %s", cause ? cause :
		    "unknown error");
		free(cause);
		return -1;
	}
	px->uppool = uppool_new(px->base);
	return 0;
}

/*
 * --token-key: the public keys whose sandbox tokens this replica accepts
 * (token.h). -1 (said) when one cannot be read or is not Ed25519.
 */
static int
main_tokens_load(struct proxy *px)
{
	EVP_PKEY	*key;
	char		*cause = NULL;
	const char	*why;
	size_t		 i;

	if ((px->tokens = token_keys_new()) == NULL)
		fatalx("out of memory");
	for (i = 0; i < px->cfg.ntoken_keys; i++) {
		key = checkpoint_pubkey_load(px->cfg.token_keys[i], &cause);
		if (key == NULL) {
			log_warnx("--token-key: %s", cause);
			free(cause);
			return -1;
		}
		if (token_keys_add(px->tokens, key, &why) == -1) {
			log_warnx("--token-key \"%s\": %s",
			    px->cfg.token_keys[i], why);
			return -1;
		}
	}
	if (px->cfg.token_any_source && px->cfg.ntoken_keys == 0) {
		log_warnx("--token-any-source needs --token-key");
		return -1;
	}
	return 0;
}

/*
 * The event loop and what runs on it: the ClientHello checker, the
 * resolver, the registry, the listeners, the control socket and the
 * signals. -1 (said) if a resolver, listener or socket cannot be set up.
 */
static int
main_loop_new(struct proxy *px)
{
	char	*cause = NULL;
	size_t	 i;

	if ((px->base = event_base_new()) == NULL)
		fatalx("cannot create the event loop");
	if ((px->sni_ctx = sni_ctx_new()) == NULL)
		fatalx("cannot create the TLS context for ClientHello checks");
	if (main_ca_load(px) == -1 || (px->cfg.secrets_dir != NULL &&
	    proxy_secrets_load(px) == -1))
		return -1;
	px->dns = dns_new(px->base, px->cfg.resolver, px->cfg.hosts,
	    px->cfg.dns_timeout_ms, &cause);
	if (px->dns == NULL) {
		log_warnx("resolver: %s", cause ? cause : "unknown error");
		return -1;
	}
	if ((px->self = addr_set_new()) == NULL ||
	    addr_set_load_local(px->self) == -1)
		log_warn("cannot list the local addresses");
	if ((px->registry = registry_new()) == NULL ||
	    (px->execs = execcred_new()) == NULL ||
	    (px->grants = grants_new()) == NULL)
		fatalx("out of memory");
	for (i = 0; i < px->cfg.nlisten; i++)
		if (main_listen(px, px->cfg.listen[i]) == -1)
			return -1;
	if (px->cfg.control_socket != NULL &&
	    control_listen(px, px->cfg.control_socket, &cause) == -1) {
		log_warnx("control socket %s: %s", px->cfg.control_socket,
		    cause ? cause : "unknown error");
		return -1;
	}
	if ((px->cfg.control_listen != NULL || px->cfg.control_token != NULL ||
	    px->cfg.control_tls_cert != NULL || px->cfg.control_tls_key !=
	    NULL) && main_control_tcp(px) == -1)
		return -1;
	if (polwatch_start(px, px->cfg.policy_watch, &cause) == -1) {
		log_warnx("--policy-watch %s: %s", px->cfg.policy_dir, cause);
		free(cause);
		return -1;
	}
	main_signals(px);
	/* Said only now: whoever waits for it finds the proxy wholly set up. */
	for (i = 0; i < px->cfg.nlisten; i++)
		fprintf(stderr, "sandgate-proxy: listening on %s\n",
		    px->cfg.listen[i]);
	return 0;
}

/*
 * --control-listen with --control-token-file (and TLS), or none; -1 (said)
 * when the API cannot be served with its token.
 */
static int
main_control_tcp(struct proxy *px)
{
	char	*cause = NULL;

	if (px->cfg.control_listen == NULL) {
		log_warnx("--control-token-file or --control-tls-* without "
		    "--control-listen");
		return -1;
	}
	if (ctltcp_listen(px, px->cfg.control_listen, px->cfg.control_token,
	    &cause) == -1) {
		log_warnx("control API: %s", cause ? cause : "unknown error");
		free(cause);
		return -1;
	}
	return 0;
}

/* SIGTERM, SIGINT, SIGHUP and SIGUSR1 on the loop (main_signal). */
static void
main_signals(struct proxy *px)
{
	const int	 signos[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	struct event	*ev;
	size_t		 i;

	for (i = 0; i < sizeof(signos) / sizeof(signos[0]); i++) {
		ev = evsignal_new(px->base, signos[i], main_signal, px);
		if (ev == NULL || evsignal_add(ev, NULL) == -1)
			fatalx("cannot handle signal %d", signos[i]);
	}
}

/*
 * Serve until drained or stopped, then flush the counted blocks, sign the
 * log's "close" checkpoint and close it: PX_EXIT_CONFIG if the log could
 * not be closed with that checkpoint.
 */
static int
main_run(struct proxy *px)
{
	int	rc = PX_EXIT_OK;

	/*
	 * Last of the set-up, so a start that fails signs nothing; a
	 * replica's proxy.started follows the open (no event of a run
	 * before its open: an open that fails is tried again before it).
	 */
	if (main_ckpt != NULL && checkpoint_write(main_ckpt, "open") == -1)
		log_warnx("checkpoint: %s", checkpoint_error(main_ckpt));
	if (px->cfg.instance != NULL)
		(void)proxy_log_started(px);	/* said; counted lost */
	px->log_space_ok = 1;	/* the first tick says if it is not */
	px->log_anchor_ok = 1;
	main_drain_timer = evtimer_new(px->base, main_tick, px);
	main_tick(-1, 0, px);
	log_info("policy digest %s, default sets \"%s\", log %s",
	    policy_digest(px->policy->policy), px->cfg.sets,
	    eventlog_path(px->seclog));
	event_base_dispatch(px->base);
	proxy_refused_flush(px);	/* nor refused connections */
	proxy_log_flush_blocks(px, 1);	/* counted attempts are not lost */
	if (main_ckpt != NULL && checkpoint_write(main_ckpt, "close") == -1) {
		log_warnx("checkpoint: %s; the log is not closed",
		    checkpoint_error(main_ckpt));
		rc = PX_EXIT_CONFIG;
	}
	checkpoint_free(main_ckpt);
	eventlog_close(px->seclog);
	polwatch_stop();
	ctltcp_close();
	control_close(px);
	log_info("exited");
	return rc;
}

int
main(int argc, char **argv)
{
	struct proxy	*px = &main_px;
	int		 rc;

	log_init("sandgate-proxy", 0);
	if ((rc = main_options(argc, argv, &px->cfg)) != 0) {
		if (rc < 0)
			fputs("run 'sandgate-proxy --help' for usage\n", stderr);
		return rc < 0 ? PX_EXIT_USAGE : PX_EXIT_OK;
	}
	log_init("sandgate-proxy", px->cfg.verbose);
	proxy_g = px;
	/* The token keys too: --check says when one cannot be used. */
	if (main_policy(px) == -1 || main_tokens_load(px) == -1)
		return PX_EXIT_CONFIG;
	if (main_check_only)
		return main_check(px);
	signal(SIGPIPE, SIG_IGN);
	main_raise_nofile();
	if (main_log_open(px) == -1 || main_loop_new(px) == -1)
		return PX_EXIT_CONFIG;
	return main_run(px);
}
