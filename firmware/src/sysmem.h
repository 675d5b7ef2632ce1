/* sysmem.h - the sbrk behind newlib-nano malloc. */
#ifndef SYSMEM_H
#define SYSMEM_H
#include <stdint.h>
/* Bytes sbrk can still hand out before reaching the heap limit. */
uint32_t sysmem_headroom(void);
#endif
