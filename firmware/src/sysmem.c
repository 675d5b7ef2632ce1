/* sysmem.c - _sbrk for newlib-nano, in the STM32CubeMX style.
 *
 * The break starts at the linker symbol _end (first byte after .bss) and may
 * grow up to _heap_limit = _end + 96 KiB (set in the linker script from
 * _Min_Heap_Size), so the nano heap is as large as heap4's ucHeap. A debugger
 * reads __sbrk_heap_end as the current break (docs/allocators/newlib-nano.md). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "sysmem.h"

extern uint8_t _end;        /* linker: end of .bss */
extern uint8_t _heap_limit; /* linker: _end + _Min_Heap_Size */

static uint8_t *__sbrk_heap_end = NULL;

void *_sbrk(ptrdiff_t incr)
{
    uint8_t *prev;

    if (__sbrk_heap_end == NULL) {
        __sbrk_heap_end = &_end;
    }
    /* Refuse to cross the limit rather than run into the stack. */
    if (__sbrk_heap_end + incr > &_heap_limit || __sbrk_heap_end + incr < &_end) {
        errno = ENOMEM;
        return (void *)-1;
    }
    prev = __sbrk_heap_end;
    __sbrk_heap_end += incr;
    return (void *)prev;
}

uint32_t sysmem_headroom(void)
{
    const uint8_t *brk = __sbrk_heap_end ? __sbrk_heap_end : &_end;
    return (uint32_t)(&_heap_limit - brk);
}
