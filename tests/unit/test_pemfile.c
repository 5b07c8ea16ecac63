/*
 * test_pemfile.c: reading the certificates of a file another user writes
 * (pemfile_read_certs), and the sandgate CA as `sandgate create` reads it
 * from the proxy's folder (proxyctl_ca_cert): a link, a hard link, a FIFO,
 * a folder, a file too large, a key or any other host file are refused
 * with words naming why, and of a file that passes only its certificates,
 * parsed and written again, come back (atk18l F2).
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pemfile.h"
#include "proxyctl.h"
#include "util.h"

#define KEY	"-----BEGIN PRIVATE KEY-----\nc2VjcmV0IGtleSBieXRlcw==\n" \
		"-----END PRIVATE KEY-----\n"

/* What a case puts at ca.crt in a fresh folder (cert: the unit CA's). */
enum plant {
	PLANT_NONE,
	PLANT_FILE,		/* text, after the cert when cert is set */
	PLANT_SYMLINK,		/* a link to a file holding the cert */
	PLANT_HARDLINK,		/* a second name of such a file */
	PLANT_FIFO,
	PLANT_DIR,
	PLANT_BIG		/* the cert, then 70,000 bytes of text */
};

static const struct {
	const char	*name;
	enum plant	 plant;
	int		 cert;
	const char	*text;
	int		 want;		/* 0, 1 (none), -1 */
	const char	*why;		/* in *cause when -1 */
} cases[] = {
	{ "the CA", PLANT_FILE, 1, "", 0, NULL },
	{ "the CA, a key and text", PLANT_FILE, 1, "notes\n" KEY "more\n", 0,
	    NULL },
	{ "none", PLANT_NONE, 0, NULL, 1, NULL },
	{ "a link", PLANT_SYMLINK, 1, NULL, -1, "it is a symbolic link" },
	{ "a hard link", PLANT_HARDLINK, 1, NULL, -1, "has 2 names" },
	{ "a FIFO", PLANT_FIFO, 0, NULL, -1, "is not a regular file" },
	{ "a folder", PLANT_DIR, 0, NULL, -1, "is not a regular file" },
	{ "too large", PLANT_BIG, 1, NULL, -1, "is larger than 65536 bytes" },
	{ "a host file", PLANT_FILE, 0, "root:$6$salt$hash:19000:0:99999:7"
	    ":::\n", -1, "holds no PEM certificate" },
	{ "the CA key", PLANT_FILE, 0, KEY, -1, "holds no PEM certificate" },
	{ "a broken block", PLANT_FILE, 0, "-----BEGIN CERTIFICATE-----\n"
	    "MIIB*not*base64\n-----END CERTIFICATE-----\n", -1,
	    "holds a broken PEM block" },
};

static char	*unit_ca;	/* the unit CA's PEM text */
static char	 root[64];	/* SANDGATE_STATE */
static char	 cadir[128];	/* root/proxy/ca */

static char *
slurp(const char *path)
{
	FILE	*f;
	char	*buf;
	long	 n;

	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	buf = util_xmalloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
spit(const char *dir, const char *name, const char *a, const char *b)
{
	char	 path[256];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(a, f);
	fputs(b, f);
	fclose(f);
}

static int
setup(void **state)
{
	char	path[256];

	(void)state;
	snprintf(path, sizeof(path), "%s/tls/unit-ca.pem",
	    getenv("SANDGATE_TEST_DATA") ? getenv("SANDGATE_TEST_DATA") :
	    "../data");
	unit_ca = slurp(path);
	snprintf(root, sizeof(root), "/tmp/sg-pemfile-" UTIL_MKTEMP_SUFFIX);
	assert_non_null(mkdtemp(root));
	setenv("SANDGATE_STATE", root, 1);
	snprintf(path, sizeof(path), "%s/proxy", root);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(cadir, sizeof(cadir), "%s/proxy/ca", root);
	return 0;
}

static int
teardown(void **state)
{
	char	cmd[256];

	(void)state;
	free(unit_ca);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* An empty root/proxy/ca with what the case plants at ca.crt. */
static void
plant(size_t i)
{
	char	cmd[512], path[256], other[256], *big;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir '%s'", cadir, cadir);
	assert_int_equal(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/ca.crt", cadir);
	snprintf(other, sizeof(other), "%s/elsewhere.pem", root);
	switch (cases[i].plant) {
	case PLANT_NONE:
		break;
	case PLANT_FILE:
		spit(cadir, "ca.crt", cases[i].cert ? unit_ca : "",
		    cases[i].text);
		break;
	case PLANT_SYMLINK:
	case PLANT_HARDLINK:
		spit(root, "elsewhere.pem", unit_ca, "");
		assert_int_equal(cases[i].plant == PLANT_SYMLINK ?
		    symlink(other, path) : link(other, path), 0);
		break;
	case PLANT_FIFO:
		assert_int_equal(mkfifo(path, 0644), 0);
		break;
	case PLANT_DIR:
		assert_int_equal(mkdir(path, 0755), 0);
		break;
	case PLANT_BIG:
		big = util_xmalloc(70001);
		memset(big, 'x', 70000);
		big[70000] = '\0';
		spit(cadir, "ca.crt", unit_ca, big);
		free(big);
		break;
	}
}

static void
test_read_certs(void **state)
{
	char	*pem, *cause;
	size_t	 i, len;
	int	 dfd, rc;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		plant(i);
		assert_int_not_equal(dfd = open(cadir, O_RDONLY |
		    O_DIRECTORY), -1);
		cause = NULL;
		rc = pemfile_read_certs(dfd, "ca.crt", "proxy/ca/ca.crt",
		    PROXYCTL_CA_CERT_MAX, &pem, &len, &cause);
		close(dfd);
		if (rc != cases[i].want || (cases[i].why != NULL &&
		    (cause == NULL || strstr(cause, cases[i].why) == NULL)))
			fail_msg("%s: rc %d, cause \"%s\"", cases[i].name, rc,
			    cause ? cause : "-");
		if (rc == 0) {
			/* The certificate alone, as the unit CA's file is. */
			assert_int_equal(len, strlen(pem));
			assert_string_equal(pem, unit_ca);
		} else
			assert_null(pem);
		free(pem);
		free(cause);
	}
}

/* What `sandgate create` reads, and the words it refuses with. */
static void
test_proxyctl_ca_cert(void **state)
{
	char	*pem, *cause = NULL, cmd[512];
	size_t	 len;

	(void)state;
	plant(0);
	assert_int_equal(proxyctl_ca_cert(&pem, &len, &cause), 0);
	assert_string_equal(pem, unit_ca);
	free(pem);
	plant(3);
	assert_int_equal(proxyctl_ca_cert(&pem, &len, &cause), -1);
	assert_null(pem);
	assert_non_null(strstr(cause, "refusing to copy the sandgate CA into "
	    "the sandbox: cannot open \""));
	assert_non_null(strstr(cause, "/proxy/ca/ca.crt\": it is a symbolic "
	    "link (the proxy writes that folder;"));
	free(cause);
	cause = NULL;
	/* The folder itself a link: refused, never followed. */
	snprintf(cmd, sizeof(cmd), "mv '%s' '%s/ca2' && ln -s '%s/ca2' '%s'",
	    cadir, root, root, cadir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(proxyctl_ca_cert(&pem, &len, &cause), -1);
	assert_non_null(strstr(cause, "not a folder (a symbolic link?)"));
	free(cause);
	cause = NULL;
	assert_int_equal(unlink(cadir), 0);
	assert_int_equal(proxyctl_ca_cert(&pem, &len, &cause), 1);
	assert_null(pem);
	assert_null(cause);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_certs),
		cmocka_unit_test(test_proxyctl_ca_cert),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
