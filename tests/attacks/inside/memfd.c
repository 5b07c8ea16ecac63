/*
 * memfd.c: a process with almost no resident memory of its own (no libc,
 * x86-64 Linux; built -static -nostdlib). "s N": sleep N s. "m N": write
 * a memfd until the memory cgroup refuses (the memory is the cgroup's,
 * not this process's RSS), then sleep N s. Row 1f: the memory cgroup's
 * OOM killer must take this and not the container's init, which holds
 * more RSS than it does.
 */
typedef unsigned long	ulong;

static long
sys3(long nr, long a, long b, long c)
{
	long	ret;

	__asm__ volatile ("syscall" : "=a" (ret) : "a" (nr), "D" (a),
	    "S" (b), "d" (c) : "rcx", "r11", "memory");
	return ret;
}

static void
say(const char *s)
{
	long	n = 0;

	while (s[n] != '\0')
		n++;
	sys3(1, 1, (long)s, n);
}

static long
number(const char *s)
{
	long	v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return v;
}

void __attribute__((noreturn, used))
memfd_main(long *sp)
{
	char	**argv = (char **)(sp + 1);
	char	  page[4096];
	long	  ts[2] = { 30, 0 }, fd, i;

	if (sp[0] > 2)
		ts[0] = number(argv[2]);
	if (sp[0] > 1 && argv[1][0] == 'm') {
		for (i = 0; i < 4096; i++)
			page[i] = (char)i;
		if ((fd = sys3(319, (long)"fill", 0, 0)) < 0)
			say("memfd_create failed\n");
		else {
			say("filling a memfd\n");
			while (sys3(1, fd, (long)page, sizeof(page)) > 0)
				;
			say("memfd full\n");
		}
	}
	sys3(35, (long)ts, 0, 0);
	say("slept\n");
	sys3(60, 0, 0, 0);
	for (;;)
		;
}

__asm__(".globl _start\n_start:\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n"
    "\tcall memfd_main\n");
