/* spinlock.h - the lock word ESP-IDF keeps in every registered heap.
 *
 * ESP-IDF's portMUX_TYPE is a spinlock_t {owner, count}; owner is
 * SPINLOCK_FREE when nobody holds it and the holding core's id otherwise. A
 * debugger that halts the target reads it to tell "heap busy" (halted inside
 * malloc/free, lists legitimately half-updated) from "heap corrupt". This
 * firmware is single-core: taking the lock only records the owner. */
#ifndef SPINLOCK_H
#define SPINLOCK_H

#include <stdint.h>

#define SPINLOCK_FREE 0xB33FFFFFu
/* The value an ESP32-S3 PRO CPU (core 0) stores as owner: its raw core id. */
#define SPINLOCK_OWNER_CORE0 0xCDCDu

typedef struct {
    volatile uint32_t owner;
    volatile uint32_t count;
} spinlock_t;

typedef spinlock_t portMUX_TYPE;

static inline void spinlock_initialize(spinlock_t *lock)
{
    lock->owner = SPINLOCK_FREE;
    lock->count = 0u;
}

static inline void spinlock_acquire(spinlock_t *lock)
{
    lock->owner = SPINLOCK_OWNER_CORE0;
    lock->count++;
    __asm__ volatile("" ::: "memory"); /* heap writes stay inside the lock */
}

static inline void spinlock_release(spinlock_t *lock)
{
    __asm__ volatile("" ::: "memory");
    if (lock->count > 0u && --lock->count == 0u) {
        lock->owner = SPINLOCK_FREE;
    }
}

#endif
