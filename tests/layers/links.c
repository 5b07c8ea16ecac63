/*
 * links.c: an empty program. tests/CMakeLists.txt links every object of one
 * module library into it, with only the libraries that one declares, so
 * the build fails if a module needs a symbol from a layer above it (a core
 * module calling into the proxy, a controller module needing main.c).
 */
int
main(void)
{
	return 0;
}
