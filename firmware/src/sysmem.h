/* sysmem.h - the sbrk behind newlib-nano malloc. */
#ifndef SYSMEM_H
#define SYSMEM_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* also linked into the C++ firmware (firmware/cpp) */
#endif

/* Bytes sbrk can still hand out before reaching the heap limit. */
uint32_t sysmem_headroom(void);

#ifdef __cplusplus
}
#endif
#endif
