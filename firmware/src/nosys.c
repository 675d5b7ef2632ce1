/* nosys.c - file syscalls for newlib-nano builds, which none of them calls.
 *
 * newlib-nano's mallinfo() lives in one object file with malloc_stats(),
 * which prints through stdio; linking mallinfo (for the firmware view) thus
 * pulls in stdio and its syscalls. These stubs satisfy the linker; they fail
 * if ever called (no file I/O in this firmware). */
#include <errno.h>
#include <sys/stat.h>

#undef errno
extern int errno;

int _write(int fd, const void *buf, int len) { (void)fd; (void)buf; (void)len; errno = ENOSYS; return -1; }
int _read(int fd, void *buf, int len) { (void)fd; (void)buf; (void)len; errno = ENOSYS; return -1; }
int _close(int fd) { (void)fd; errno = ENOSYS; return -1; }
int _lseek(int fd, int off, int whence) { (void)fd; (void)off; (void)whence; errno = ENOSYS; return -1; }
int _fstat(int fd, struct stat *st) { (void)fd; st->st_mode = S_IFCHR; return 0; }
int _isatty(int fd) { (void)fd; return 1; }
