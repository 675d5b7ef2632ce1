/* task_queue.c - a producer/consumer pair over a FreeRTOS queue of pointers to heap messages.
 *
 * The Producer allocates a message every PRODUCE_PERIOD_MS (24 to 72 bytes, the size
 * cycling), fills it and sends the pointer; the Consumer, at a higher priority, receives it at
 * once, checks the contents and frees it. So each message is allocated by one task and freed
 * by another: it is the Producer's allocation, and not a leak of the Producer's. */
#include "app.h"

#include "mem.h"
#include "queue.h"

#define PRODUCE_PERIOD_MS    20
#define QUEUE_DEPTH          4
#define MESSAGE_MIN_BYTES    24u

typedef struct {
    uint32_t seq;
    uint32_t len;      /* payload bytes */
    uint32_t checksum; /* of the payload */
    uint8_t payload[];
} message_t;

volatile uint32_t g_messages_consumed;
static QueueHandle_t queue;

static uint32_t payload_sum(const message_t *m)
{
    uint32_t sum = 0;
    for (uint32_t i = 0; i < m->len; i++) sum = sum * 31u + m->payload[i];
    return sum;
}

static void producer_task(void *arg)
{
    (void)arg;
    for (uint32_t seq = 0;; seq++) {
        vTaskDelay(pdMS_TO_TICKS(PRODUCE_PERIOD_MS));
        const uint32_t len = MESSAGE_MIN_BYTES + (seq % 4u) * 16u - sizeof(message_t);
        message_t *m = mem_alloc(sizeof(message_t) + len, "producer:message");
        m->seq = seq;
        m->len = len;
        for (uint32_t i = 0; i < len; i++) m->payload[i] = (uint8_t)(seq + i);
        m->checksum = payload_sum(m);
        (void)xQueueSend(queue, &m, portMAX_DELAY);
    }
}

static void consumer_task(void *arg)
{
    (void)arg;
    for (uint32_t expected = 0;; expected++) {
        message_t *m = NULL;
        (void)xQueueReceive(queue, &m, portMAX_DELAY);
        configASSERT(m != NULL && m->seq == expected && m->checksum == payload_sum(m));
        mem_free(m);
        g_messages_consumed++;
    }
}

void queue_start(void)
{
    queue = xQueueCreate(QUEUE_DEPTH, sizeof(message_t *));
    if (queue == NULL) fw_fail("xQueueCreate: out of heap", FW_EXIT_OOM);
    vQueueAddToRegistry(queue, "Messages");
    (void)app_create_task(producer_task, "Producer", QUEUE_STACK_WORDS, PRIO_PRODUCER, NULL);
    (void)app_create_task(consumer_task, "Consumer", QUEUE_STACK_WORDS, PRIO_CONSUMER, NULL);
}
